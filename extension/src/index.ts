/**
 * metalbench-lab: Metal Shading Language highlighting in JupyterLab 4 / Notebook 7.
 *
 * - registers the `text/x-metal` language (and the `.metal` file type);
 * - gives `%%metal` notebook cells Metal highlighting when their body is MSL and
 *   Python highlighting when it is a DSL `def`, and keeps it that way when the
 *   notebook resets every cell's mime type (kernel start/restart, a
 *   `language_info` change, new cells).
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import type { ICellModel } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { detectCellLanguage } from './detect';
import { METAL_MIME, metal } from './metal';

export { detectCellLanguage, bodyLanguage } from './detect';
export { METAL_MIME, metal, metalLanguage } from './metal';

const PYTHON_FALLBACK_MIME = 'text/x-ipython';

/**
 * Keeps the mime types of one notebook's `%%metal` cells right.
 */
class MetalCellWatcher {
  constructor(private _panel: NotebookPanel) {
    const notebook = _panel.content;
    notebook.modelChanged.connect(this._onModelChanged, this);
    this._onModelChanged();
  }

  private _onModelChanged(): void {
    const model = this._panel.content.model;
    if (!model || this._models.has(model)) {
      return;
    }
    this._models.add(model);
    model.cells.changed.connect(() => this._watchAll(), this);
    this._watchAll();
  }

  private _watchAll(): void {
    const model = this._panel.content.model;
    if (!model) {
      return;
    }
    for (let i = 0; i < model.cells.length; i++) {
      this._watch(model.cells.get(i));
    }
  }

  private _watch(cell: ICellModel): void {
    if (cell.type !== 'code' || this._cells.has(cell)) {
      return;
    }
    this._cells.add(cell);
    cell.contentChanged.connect(() => this._update(cell), this);
    // Whoever sets the mime type (the notebook resets every code cell when
    // `language_info` changes, e.g. on kernel (re)start; a new cell gets the
    // notebook's default), a `%%metal` cell gets its own back.
    cell.mimeTypeChanged.connect(() => this._update(cell), this);
    this._update(cell);
  }

  /** The notebook's own code mime type (what non-magic cells use). */
  private _defaultMime(): string {
    const mime = this._panel.content.codeMimetype;
    return mime && mime !== METAL_MIME ? mime : PYTHON_FALLBACK_MIME;
  }

  private _update(cell: ICellModel): void {
    if (cell.isDisposed) {
      return;
    }
    const lang = detectCellLanguage(cell.sharedModel.getSource());
    let wanted: string;
    if (lang === 'msl') {
      wanted = METAL_MIME;
    } else if (lang === 'python') {
      const mime = this._defaultMime();
      wanted = mime.includes('python') ? mime : PYTHON_FALLBACK_MIME;
    } else if (cell.mimeType === METAL_MIME) {
      // No longer a `%%metal` cell: give it back the notebook's language.
      wanted = this._defaultMime();
    } else {
      return;
    }
    if (cell.mimeType !== wanted) {
      cell.mimeType = wanted;
    }
  }

  private _models = new WeakSet<object>();
  private _cells = new WeakSet<ICellModel>();
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'metalbench-lab:plugin',
  description:
    'Metal Shading Language highlighting for %%metal cells and .metal files.',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  optional: [INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    languages: IEditorLanguageRegistry,
    tracker: INotebookTracker | null
  ) => {
    languages.addLanguage({
      name: 'Metal',
      displayName: 'Metal Shading Language',
      alias: ['metal', 'msl'],
      mime: METAL_MIME,
      extensions: ['metal'],
      support: metal(),
      load: async () => metal()
    });
    app.docRegistry.addFileType({
      name: 'metal',
      displayName: 'Metal Shading Language',
      extensions: ['.metal'],
      mimeTypes: [METAL_MIME],
      fileFormat: 'text',
      contentType: 'file'
    });
    // Both languages loaded up front: the editor loads a language asynchronously
    // on every mime type change, and with both already loaded those loads finish
    // in the order of the changes, so Metal set right after Python stays.
    void languages.getLanguage(PYTHON_FALLBACK_MIME);
    if (tracker) {
      tracker.widgetAdded.connect((_, panel) => {
        new MetalCellWatcher(panel);
      });
      tracker.forEach(panel => new MetalCellWatcher(panel));
    }
    console.log('metalbench-lab: Metal highlighting is active');
  }
};

export default plugin;
