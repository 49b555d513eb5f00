// Builds the prebuilt (federated) extension into ./labextension with Node alone.
//
// `jupyter labextension build` needs JupyterLab's Python package only to find the
// core package.json (which packages JupyterLab shares, at which versions); the
// npm package @jupyterlab/core-meta ships that file, so wheel builds in an
// isolated environment need Node but no JupyterLab.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const here = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const coreMeta = path.dirname(require.resolve('@jupyterlab/core-meta/package.json'));
const coreDir = path.join(here, 'node_modules', '.metalbench-core');
mkdirSync(coreDir, { recursive: true });
copyFileSync(path.join(coreMeta, 'core.package.json'), path.join(coreDir, 'package.json'));

const builder = require.resolve('@jupyterlab/builder/lib/build-labextension.js');
const args = [builder, '--core-path', coreDir, ...process.argv.slice(2), here];
execFileSync(process.execPath, args, { stdio: 'inherit', cwd: here });
// install.json tells `jupyter labextension list` which Python package ships it.
copyFileSync(path.join(here, 'install.json'), path.join(here, 'labextension', 'install.json'));
