// Browser tests for metalbench-lab: a real Jupyter server (from the venv on PATH) driven
// by playwright-core with Debian's chromium (no browser downloads). The same server
// serves both front ends: JupyterLab (/lab) and Jupyter Notebook 7 (/notebooks, from the
// `notebook` package); each gets the %%metal highlighting and the workbench panel.
//
//   PATH=/path/to/.venv/bin:$PATH node ui-tests/run.mjs      (or `make test-browser`)
//
// Environment: CHROMIUM (default /usr/bin/chromium), SCREENSHOT_DIR (default
// ui-tests/output), QUICKSTART (default ../notebooks/quickstart.ipynb).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = path.resolve(process.env.SCREENSHOT_DIR || path.join(here, 'output'));
const QUICKSTART = path.resolve(
  process.env.QUICKSTART || path.join(repo, 'notebooks', 'quickstart.ipynb')
);
const t0 = Date.now();

const MSL_CELL = [
  '%%metal smooth --inputs x --outputs out --grid x.size --threadgroup 256',
  'uint i = thread_position_in_grid.x;',
  'uint l = thread_position_in_threadgroup.x;',
  'threadgroup float tile[256];',
  'device const float* src = x;',
  'tile[l] = metal::exp(src[i]);',
  'threadgroup_barrier(mem_flags::mem_threadgroup);',
  'float4 v = float4(tile[l]);',
  'out[i] = simd_sum(v.x) / 32.0f;'
].join('\n');

const DSL_CELL = [
  '%%metal',
  '@mb.kernel',
  'def saxpy(a: float, x, y, out: mb.Out):',
  'i = thread_position_in_grid.x',
  'out[i] = a * x[i] + y[i]'
].join('\n');

const METAL_FILE = `#include <metal_stdlib>
using namespace metal;

// y = a * x + y, one thread per element
[[kernel]] void saxpy(device const float* x [[buffer(0)]],
                      device float* y [[buffer(1)]],
                      constant float& a [[buffer(2)]],
                      uint i [[thread_position_in_grid]]) {
    threadgroup half2 scratch[32];
    y[i] = fma(a, x[i], y[i]);
    atomic_fetch_add_explicit(nullptr, 1, memory_order_relaxed);
}
`;

let failures = 0;
let passes = 0;
function check(cond, what) {
  if (cond) {
    passes++;
    console.log(`  ok   ${what}`);
  } else {
    failures++;
    console.log(`  FAIL ${what}`);
  }
}
function log(msg) {
  console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitForServer(url, proc, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (proc.exitCode !== null) {
      throw new Error(`jupyter lab exited with ${proc.exitCode}`);
    }
    try {
      const r = await fetch(url);
      if (r.ok) {
        return;
      }
    } catch {
      // not up yet
    }
    await new Promise(r => setTimeout(r, 250));
  }
  throw new Error(`JupyterLab did not answer at ${url} within ${timeoutMs} ms`);
}

function notebookJson(cells) {
  return JSON.stringify({
    cells: cells.map(source => ({
      cell_type: 'code',
      execution_count: null,
      metadata: {},
      outputs: [],
      source
    })),
    metadata: {
      kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' },
      language_info: { name: 'python' }
    },
    nbformat: 4,
    nbformat_minor: 5
  });
}

async function startLab(root) {
  const port = await freePort();
  const cfg = path.join(root, '.config');
  const settings = path.join(cfg, 'settings', '@jupyterlab', 'apputils-extension');
  fs.mkdirSync(settings, { recursive: true });
  // No news / update toasts over the cells.
  fs.writeFileSync(
    path.join(settings, 'notification.jupyterlab-settings'),
    JSON.stringify({ fetchNews: 'false', checkForUpdates: false })
  );
  const args = [
    'lab',
    '--no-browser',
    '--allow-root',
    `--port=${port}`,
    '--ip=127.0.0.1',
    '--ServerApp.token=',
    '--ServerApp.password=',
    '--ServerApp.disable_check_xsrf=True',
    `--ServerApp.root_dir=${root}`,
    '--expose-app-in-browser',
    // Notebook 7 runs as an extension of the same server; it exposes its app too.
    '--JupyterNotebookApp.expose_app_in_browser=True',
    `--LabApp.user_settings_dir=${path.join(cfg, 'settings')}`,
    `--LabApp.workspaces_dir=${path.join(cfg, 'workspaces')}`
  ];
  const env = {
    ...process.env,
    JUPYTER_CONFIG_DIR: cfg,
    JUPYTER_RUNTIME_DIR: path.join(cfg, 'runtime'),
    // keep the kernel quick and quiet
    MPLBACKEND: 'Agg'
  };
  const proc = spawn('jupyter', args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = fs.createWriteStream(path.join(root, 'jupyter.log'));
  proc.stdout.pipe(out);
  proc.stderr.pipe(out);
  const url = `http://127.0.0.1:${port}`;
  await waitForServer(`${url}/api/status`, proc, 90000);
  return { proc, url };
}

/** Opens a notebook (in JupyterLab, or with front = 'notebook' in Notebook 7) and waits
 * until its kernel is idle. */
async function openNotebook(page, url, name, front = 'lab') {
  // ?reset: no tabs restored (JupyterLab)
  await page.goto(front === 'lab' ? `${url}/lab/tree/${name}?reset` : `${url}/notebooks/${name}`);
  await page.waitForFunction(
    () => {
      const app = window.jupyterapp;
      const w = app && app.shell.currentWidget;
      const kernel = w && w.sessionContext && w.sessionContext.session?.kernel;
      return !!(kernel && kernel.status === 'idle' && w.content && w.content.widgets.length);
    },
    null,
    { timeout: 90000 }
  );
}

/** Mime type, CodeMirror language and token classes/colours of a notebook cell. */
function cellInfo(page, index) {
  return page.evaluate(i => {
    const nb = window.jupyterapp.shell.currentWidget.content;
    const cell = nb.widgets[i];
    const probe = document.createElement('span');
    probe.style.color = 'var(--jp-mirror-editor-keyword-color)';
    cell.node.appendChild(probe);
    const keywordColor = getComputedStyle(probe).color;
    probe.remove();
    const content = cell.node.querySelector('.cm-content');
    const tokens = {};
    for (const span of cell.node.querySelectorAll('.cm-line span')) {
      const text = span.textContent;
      if (!(text in tokens)) {
        tokens[text] = {
          cls: span.className,
          color: getComputedStyle(span).color
        };
      }
    }
    return {
      mime: cell.model.mimeType,
      language: content && content.getAttribute('data-language'),
      keywordColor,
      tokens
    };
  }, index);
}

async function waitForMime(page, index, mime, timeout = 15000) {
  await page
    .waitForFunction(
      ([i, m]) => {
        const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
        const content = cell.node.querySelector('.cm-content');
        const lang = m === 'text/x-metal' ? 'metal' : 'python';
        return (
          cell.model.mimeType.includes(m) &&
          content &&
          content.getAttribute('data-language') === lang
        );
      },
      [index, mime],
      { timeout }
    )
    .catch(() => undefined);
}

function checkMsl(info, when) {
  const tok = info.tokens;
  check(info.mime === 'text/x-metal', `${when}: MSL cell mime type is text/x-metal (got ${info.mime})`);
  check(info.language === 'metal', `${when}: MSL cell editor language is metal (got ${info.language})`);
  for (const word of ['threadgroup', 'device', 'const']) {
    check(
      tok[word] && /tok-keyword/.test(tok[word].cls) && tok[word].color === info.keywordColor,
      `${when}: '${word}' is a keyword in the keyword colour (${JSON.stringify(tok[word])})`
    );
  }
  for (const word of ['uint', 'float', 'float4']) {
    check(tok[word] && /tok-typeName/.test(tok[word].cls), `${when}: '${word}' is a type (${JSON.stringify(tok[word])})`);
  }
  for (const word of ['threadgroup_barrier', 'mem_flags', 'simd_sum', 'metal', 'exp']) {
    check(tok[word] && /tok-builtin/.test(tok[word].cls),
      `${when}: '${word}' is a builtin (${JSON.stringify(tok[word])})`);
  }
  const magic = Object.keys(tok).find(k => k.startsWith('%%metal'));
  check(magic && /tok-meta/.test(tok[magic].cls), `${when}: the %%metal line is a meta line`);
}

function checkDsl(info, when) {
  const tok = info.tokens;
  check(/python/.test(info.mime), `${when}: DSL cell mime type is Python (got ${info.mime})`);
  check(info.language === 'python', `${when}: DSL cell editor language is python (got ${info.language})`);
  check(tok['def'] && tok['def'].color === info.keywordColor, `${when}: 'def' is in the keyword colour`);
}

async function testCells(page, url, root) {
  log('highlighting of typed %%metal cells');
  fs.writeFileSync(path.join(root, 'cells.ipynb'), notebookJson(['']));
  await openNotebook(page, url, 'cells.ipynb');
  const editor0 = page.locator('.jp-Notebook .jp-Cell').nth(0).locator('.cm-content');
  await editor0.click();
  await page.keyboard.type(MSL_CELL);
  await page.keyboard.press('Escape');
  await page.keyboard.press('b');
  await page.keyboard.press('Enter');
  await page.keyboard.type(DSL_CELL);
  await page.keyboard.press('Escape');
  await waitForMime(page, 0, 'text/x-metal');
  await waitForMime(page, 1, 'python');
  checkMsl(await cellInfo(page, 0), 'typed');
  checkDsl(await cellInfo(page, 1), 'typed');
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.locator('.jp-Notebook .jp-Cell').nth(0).screenshot({ path: path.join(SHOTS, 'msl-cell.png') });
  await page.locator('.jp-Notebook .jp-Cell').nth(1).screenshot({ path: path.join(SHOTS, 'dsl-cell.png') });

  log('kernel restart');
  await page.evaluate(() => window.jupyterapp.shell.currentWidget.sessionContext.restartKernel());
  await page.waitForFunction(
    () => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle',
    null,
    { timeout: 60000 }
  );
  await page.waitForTimeout(1000);
  checkMsl(await cellInfo(page, 0), 'after restart');
  checkDsl(await cellInfo(page, 1), 'after restart');

  log('language_info change (the notebook resets every code cell)');
  await page.evaluate(() => {
    const model = window.jupyterapp.shell.currentWidget.content.model;
    model.setMetadata('language_info', { name: 'python', version: '3.0', codemirror_mode: { name: 'ipython', version: 3 } });
    model.setMetadata('language_info', { name: 'python', version: '3.1', mimetype: 'text/x-python' });
  });
  await page.waitForTimeout(1000);
  checkMsl(await cellInfo(page, 0), 'after language_info change');
  checkDsl(await cellInfo(page, 1), 'after language_info change');

  log('editing: a DSL body turns an MSL cell Python, removing %%metal turns it back');
  await page.evaluate(() => {
    const cell = window.jupyterapp.shell.currentWidget.content.widgets[0];
    cell.model.sharedModel.setSource('%%metal k\n# comment\n@mb.kernel\ndef k(x):\n    pass\n');
  });
  await waitForMime(page, 0, 'python');
  check(/python/.test((await cellInfo(page, 0)).mime), 'a decorated def body is Python');
  await page.evaluate(() => {
    const cell = window.jupyterapp.shell.currentWidget.content.widgets[0];
    cell.model.sharedModel.setSource('%%metal k --lang msl\ndef k(x): pass\n');
  });
  await waitForMime(page, 0, 'text/x-metal');
  check((await cellInfo(page, 0)).mime === 'text/x-metal', '--lang msl forces Metal');
  await page.evaluate(() => {
    const cell = window.jupyterapp.shell.currentWidget.content.widgets[0];
    cell.model.sharedModel.setSource('x = 1  # no magic\n');
  });
  await waitForMime(page, 0, 'python');
  check(/python/.test((await cellInfo(page, 0)).mime), 'a cell without %%metal is Python again');

  log('a ```metal code block in a Markdown cell');
  await page.evaluate(() => {
    const nb = window.jupyterapp.shell.currentWidget.content;
    nb.model.sharedModel.insertCell(2, {
      cell_type: 'markdown',
      source: '```metal\nthreadgroup float tile[32];\n```'
    });
    nb.activeCellIndex = 2;
    return window.jupyterapp.commands.execute('notebook:run-cell');
  });
  const md = await page
    .waitForFunction(() => {
      const cell = window.jupyterapp.shell.currentWidget.content.widgets[2];
      const spans = [...cell.node.querySelectorAll('.jp-RenderedMarkdown pre span')];
      const kw = spans.find(s => s.textContent === 'threadgroup');
      return kw ? getComputedStyle(kw).color : null;
    }, null, { timeout: 15000 })
    .then(h => h.jsonValue(), () => null);
  const keywordColor = (await cellInfo(page, 0)).keywordColor;
  check(md === keywordColor, `'threadgroup' in a \`\`\`metal block is in the keyword colour (${md})`);
  await page.evaluate(() => window.jupyterapp.shell.currentWidget.context.save());
}

async function testMetalFile(page, url, root) {
  log('.metal file in the editor');
  fs.writeFileSync(path.join(root, 'saxpy.metal'), METAL_FILE);
  await page.goto(`${url}/lab/tree/saxpy.metal?reset`);
  await page.waitForSelector('.jp-FileEditor .cm-content[data-language="metal"]', { timeout: 30000 }).catch(() => undefined);
  // the highlighter runs after the editor has its language (later on a loaded machine):
  // read the tokens until the attribute spans are there (up to ~15 s)
  let info;
  for (let attempt = 0; attempt < 30; attempt++) {
    info = await page.evaluate(() => {
      const w = window.jupyterapp.shell.currentWidget;
      const tokens = {};
      for (const span of w.node.querySelectorAll('.cm-line span')) {
        tokens[span.textContent] = tokens[span.textContent] || span.className;
      }
      return {
        mime: w.content.model.mimeType,
        language: w.node.querySelector('.cm-content')?.getAttribute('data-language'),
        tokens
      };
    });
    if (/tok-attributeName/.test(info.tokens['[[kernel]]'] || '') && /tok-keyword/.test(info.tokens['constant'] || '')) {
      break;
    }
    await page.waitForTimeout(500);
  }
  check(info.mime === 'text/x-metal', `.metal file mime type is text/x-metal (got ${info.mime})`);
  check(info.language === 'metal', '.metal file editor language is metal');
  check(/tok-attributeName/.test(info.tokens['[[kernel]]'] || ''), '[[kernel]] is an attribute');
  check(/tok-attributeName/.test(info.tokens['[[buffer(0)]]'] || ''), '[[buffer(0)]] is an attribute');
  check(/tok-attributeName/.test(info.tokens['[[thread_position_in_grid]]'] || ''), '[[thread_position_in_grid]] is an attribute');
  check(/tok-meta/.test(info.tokens['#include <metal_stdlib>'] || ''), '#include is a preprocessor line');
  check(/tok-typeName/.test(info.tokens['half2'] || ''), 'half2 is a type');
  check(/tok-keyword/.test(info.tokens['constant'] || ''), 'constant is a keyword');
  const box = await page.locator('.jp-FileEditor').boundingBox();
  await page.screenshot({
    path: path.join(SHOTS, 'metal-file.png'),
    clip: { x: box.x, y: box.y, width: Math.min(box.width, 760), height: 250 }
  });
}


/** Every `%%metal` cell of the open notebook: Metal for an MSL body, Python for a DSL def. */
async function checkMetalCells(page, name) {
  const cells = await page.evaluate(() =>
    window.jupyterapp.shell.currentWidget.content.widgets
      .map((c, i) => ({ i, src: c.model.sharedModel.getSource(), mime: c.model.mimeType }))
      .filter(c => c.src.startsWith('%%metal'))
  );
  for (const c of cells) {
    const dsl = /^\s*(@|def\s)/m.test(c.src.split('\n').slice(1).join('\n'));
    const ok = dsl ? /python/.test(c.mime) : c.mime === 'text/x-metal';
    check(ok, `${name} cell ${c.i} (${dsl ? 'DSL' : 'MSL'} body) has mime type ${c.mime}`);
  }
  return cells;
}

async function testQuickstart(page, url, root, front = 'lab') {
  if (!fs.existsSync(QUICKSTART)) {
    console.log(`  SKIP quickstart: ${path.relative(process.cwd(), QUICKSTART)} does not exist yet`);
    return;
  }
  const where = front === 'lab' ? 'quickstart' : 'Notebook 7 quickstart';
  log(`${where}: run all, screenshot the workbench panel`);
  // Copy the notebooks folder so relative paths in the notebook still work.
  const dir = path.join(root, `nb-${front}`);
  fs.cpSync(path.dirname(QUICKSTART), dir, { recursive: true });
  await openNotebook(page, url, `nb-${front}/${path.basename(QUICKSTART)}`, front);
  // Resolves once every cell ran (or one failed; run-all stops there).
  const ranAll = await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
  const errors = await page.evaluate(() =>
    window.jupyterapp.shell.currentWidget.content.widgets
      .filter(c => c.model.type === 'code')
      .flatMap(c => c.model.outputs.toJSON())
      .filter(o => o.output_type === 'error')
      .map(o => `${o.ename}: ${o.evalue}`)
  );
  check(ranAll !== false && errors.length === 0, `${where} ran without errors (${ranAll}, ${JSON.stringify(errors)})`);
  await checkMetalCells(page, where);
  const metalCell = await page.evaluate(() => {
    const w = window.jupyterapp.shell.currentWidget;
    return w.content.widgets.findIndex(c => c.model.sharedModel.getSource().startsWith('%%metal'));
  });
  check(metalCell >= 0, `${where} has a %%metal cell`);
  if (metalCell < 0) {
    return;
  }
  const panelId = await page.evaluate(() => window.jupyterapp.shell.currentWidget.id);
  const cell = page.locator(`[id="${panelId}"] .jp-Notebook .jp-Cell`).nth(metalCell);
  await cell.scrollIntoViewIfNeeded();
  const widget = cell.locator('.jp-OutputArea-output .jupyter-widgets').first();
  const hasWidget = await widget.waitFor({ timeout: 30000 }).then(() => true, () => false);
  check(hasWidget, `${where}: the %%metal cell shows an ipywidgets workbench panel`);
  if (hasWidget) {
    // The panel's parts rendered, not only its frame: sliders, buttons, tabs, source view.
    const parts = await cell.evaluate(node => ({
      sliders: node.querySelectorAll('.widget-slider, .jupyter-widget-slider').length,
      buttons: [...node.querySelectorAll('button')].map(b => b.textContent.trim()).filter(t => t),
      tabs: [...node.querySelectorAll('.lm-TabBar-tabLabel, .p-TabBar-tabLabel')].map(t => t.textContent),
      source: node.querySelector('.jupyter-widgets .highlight, .jupyter-widgets pre') !== null
    }));
    check(parts.sliders >= 3, `${where}: the panel has its threadgroup sliders (${parts.sliders})`);
    for (const b of ['Run', 'Sweep', 'Export']) {
      check(parts.buttons.includes(b), `${where}: the panel has a ${b} button (${parts.buttons})`);
    }
    check(['Source', 'Check', 'Timing', 'Sweep', 'Export'].every(t => parts.tabs.includes(t)),
      `${where}: the panel has its tabs (${parts.tabs})`);
    check(parts.source, `${where}: the Source tab shows the generated code`);
  }
  await page.waitForTimeout(2500); // let plots and layout settle
  await cell.scrollIntoViewIfNeeded();
  await cell.screenshot({ path: path.join(SHOTS, front === 'lab' ? 'workbench-panel.png' : 'nb7-workbench-panel.png') });
}

/** Notebook 7: %%metal cells (MSL and DSL bodies) highlighted as in JupyterLab. */
async function testNotebook7Cells(page, url, root) {
  log('Notebook 7: highlighting of %%metal cells');
  const dsl = '%%metal\n@mb.kernel\ndef saxpy(a: float, x, y, out: mb.Out):\n    i = thread_position_in_grid.x\n' +
    '    out[i] = a * x[i] + y[i]\n';
  fs.writeFileSync(path.join(root, 'nb7-cells.ipynb'), notebookJson([MSL_CELL, dsl]));
  await openNotebook(page, url, 'nb7-cells.ipynb', 'notebook');
  const ui = await page.evaluate(() => ({
    notebook7: !!document.querySelector('#main-panel, .jp-NotebookPanel') && !location.pathname.startsWith('/lab'),
    path: location.pathname
  }));
  check(ui.notebook7, `the Notebook 7 front end is open (${ui.path})`);
  await waitForMime(page, 0, 'text/x-metal');
  await waitForMime(page, 1, 'python');
  checkMsl(await cellInfo(page, 0), 'Notebook 7');
  checkDsl(await cellInfo(page, 1), 'Notebook 7');
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.locator('.jp-Notebook .jp-Cell').nth(0).screenshot({ path: path.join(SHOTS, 'nb7-msl-cell.png') });
}

async function testMslNotebook(page, url, root) {
  const file = path.join(path.dirname(QUICKSTART), 'msl_cells.ipynb');
  if (!fs.existsSync(file)) {
    console.log(`  SKIP msl_cells: ${file} does not exist`);
    return;
  }
  log('msl_cells notebook: MSL %%metal cells, the panel of the first one');
  const dir = path.join(root, 'nb');
  fs.cpSync(path.dirname(file), dir, { recursive: true });
  await openNotebook(page, url, 'nb/msl_cells.ipynb');
  const cells = await checkMetalCells(page, 'msl_cells');
  const first = cells.find(c => c.mime === 'text/x-metal');
  if (!first) {
    return;
  }
  // Run the cells above it and then the cell itself.
  const ok = await page.evaluate(async i => {
    const app = window.jupyterapp;
    app.shell.currentWidget.content.activeCellIndex = i;
    await app.commands.execute('notebook:run-all-above');
    app.shell.currentWidget.content.activeCellIndex = i;
    return app.commands.execute('notebook:run-cell');
  }, first.i);
  check(ok !== false, 'msl_cells: the first MSL %%metal cell ran');
  const panelId = await page.evaluate(() => window.jupyterapp.shell.currentWidget.id);
  const cell = page.locator(`[id="${panelId}"] .jp-Notebook .jp-Cell`).nth(first.i);
  const hasWidget = await cell
    .locator('.jp-OutputArea-output .jupyter-widgets')
    .first()
    .waitFor({ timeout: 30000 })
    .then(() => true, () => false);
  check(hasWidget, 'msl_cells: the MSL cell shows the workbench panel');
  await page.waitForTimeout(2500);
  await cell.scrollIntoViewIfNeeded();
  await cell.screenshot({ path: path.join(SHOTS, 'msl-panel.png') });
}

/** notebooks/debugging.ipynb: run all; screenshots of the panel's Memory tab (findings with
 * Inspect buttons, access-map heat maps) and Inspect tab (source with the current line). */
async function testDebuggingNotebook(page, url, root) {
  const file = path.join(path.dirname(QUICKSTART), 'debugging.ipynb');
  if (!fs.existsSync(file)) {
    console.log(`  SKIP debugging: ${file} does not exist`);
    return;
  }
  log('debugging notebook: run all, screenshot the Memory and Inspect tabs');
  const dir = path.join(root, 'nb-debug');
  fs.cpSync(path.dirname(file), dir, { recursive: true });
  await openNotebook(page, url, 'nb-debug/debugging.ipynb');
  const ranAll = await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
  const errors = await page.evaluate(() =>
    window.jupyterapp.shell.currentWidget.content.widgets
      .filter(c => c.model.type === 'code')
      .flatMap(c => c.model.outputs.toJSON())
      .filter(o => o.output_type === 'error')
      .map(o => `${o.ename}: ${o.evalue}`)
  );
  check(ranAll !== false && errors.length === 0, `debugging ran without errors (${ranAll}, ${JSON.stringify(errors)})`);
  const cells = await page.evaluate(() =>
    window.jupyterapp.shell.currentWidget.content.widgets
      .map((c, i) => ({ i, src: c.model.sharedModel.getSource() }))
      .filter(c => /Workbench\(/.test(c.src))
      .map(c => c.i)
  );
  check(cells.length === 2, `debugging has two panel cells (${cells})`);
  const panelId = await page.evaluate(() => window.jupyterapp.shell.currentWidget.id);
  const shots = [['Memory', 'debugger-memory.png', 'Inspect ('], ['Inspect', 'debugger-inspect.png', 'step ']];
  for (const [n, [tab, shot, text]] of shots.entries()) {
    if (cells[n] === undefined) {
      continue;
    }
    const cell = page.locator(`[id="${panelId}"] .jp-Notebook .jp-Cell`).nth(cells[n]);
    await cell.scrollIntoViewIfNeeded();
    const widget = cell.locator('.jp-OutputArea-output .jupyter-widgets').first();
    const has = await widget.waitFor({ timeout: 30000 }).then(() => true, () => false);
    check(has, `debugging: panel ${n + 1} is an ipywidgets panel`);
    if (!has) {
      continue;
    }
    // the tab the notebook selected (check_memory: Memory; inspect: Inspect) is showing
    const shown = await cell
      .locator('.lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel, .p-TabBar-tab.p-mod-current .p-TabBar-tabLabel')
      .first()
      .textContent()
      .catch(() => '');
    check(shown === tab, `debugging: panel ${n + 1} shows its ${tab} tab (${shown})`);
    // the tab's widgets render after the panel itself (and later still on a slow machine):
    // poll for the text rather than reading the DOM once
    let visible = false;
    let seen = '';
    for (let attempt = 0; attempt < 40 && !visible; attempt++) {
      seen = await cell.evaluate(node => {
        const panels = [...node.querySelectorAll('.lm-TabPanel-stackedPanel > .lm-Widget, .p-TabPanel-stackedPanel > .p-Widget, .widget-tab-contents > .lm-Widget, .widget-tab-contents > .p-Widget')]
          .filter(p => !p.classList.contains('lm-mod-hidden') && !p.classList.contains('p-mod-hidden'));
        return panels.map(p => p.innerText).join('\n');
      });
      visible = seen.includes(text);
      if (!visible) {
        // JupyterLab's windowed notebook may detach cells scrolled out of view
        await cell.scrollIntoViewIfNeeded().catch(() => {});
        await page.waitForTimeout(500);
      }
    }
    check(visible, `debugging: the ${tab} tab shows '${text}' (${JSON.stringify(seen.slice(0, 160))})`);
    await page.waitForTimeout(1500);
    // the tab's contents only: the panel's title, status and controls are in other screenshots
    const tabs = cell.locator('.jupyter-widgets.widget-tab, .jupyter-widget-tab').first();
    const target = (await tabs.count()) ? tabs : cell;
    await target.scrollIntoViewIfNeeded();
    await target.screenshot({ path: path.join(SHOTS, shot) });
  }
}

async function main() {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`no chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM)`);
  }
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'metalbench-ui-'));
  log(`starting JupyterLab in ${root}`);
  const { proc, url } = await startLab(root);
  let browser;
  try {
    log(`JupyterLab is up at ${url}`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync'
      ]
    });
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    page.setDefaultTimeout(30000);
    page.on('console', msg => {
      if (msg.type() === 'error' && /metalbench/i.test(msg.text())) {
        console.log(`  browser console: ${msg.text()}`);
      }
    });
    await testCells(page, url, root);
    await testMetalFile(page, url, root);
    await testQuickstart(page, url, root);
    await testDebuggingNotebook(page, url, root);
    await testMslNotebook(page, url, root);
    await testNotebook7Cells(page, url, root);
    await testQuickstart(page, url, root, 'notebook');
  } finally {
    if (browser) {
      await browser.close();
    }
    proc.kill('SIGTERM');
    await new Promise(r => setTimeout(r, 500));
    if (proc.exitCode === null) {
      proc.kill('SIGKILL');
    }
    if (failures) {
      console.log(`JupyterLab log: ${path.join(root, 'jupyter.log')}`);
    } else {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }
  log(`${passes} passed, ${failures} failed; screenshots in ${SHOTS}`);
  process.exit(failures ? 1 : 0);
}

main().catch(err => {
  console.error(err);
  process.exit(1);
});
