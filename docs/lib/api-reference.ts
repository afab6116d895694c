// The API reference, generated from the code: the TypeScript compiler reads each public entry
// (`src/index.ts` for `distvae`, then the subpath entries package.json exports), follows each
// export statement in order to the module that declares it, and renders every exported
// declaration with its signature and JSDoc, grouped by entry, then by module under the module's
// own header comment. Nothing here lists the API by hand, so the page cannot drift from the code.

import ts from 'typescript';
import { relative } from 'node:path';
import { escapeXml } from '../../src/bench/plan-figure.js';

export interface ApiEntry {
  name: string;
  kind: 'function' | 'interface' | 'type' | 'class' | 'const' | 'enum';
  /** Declaration text without bodies or the `export` keyword. */
  signature: string;
  /** JSDoc text (empty when the declaration has none). */
  doc: string;
}

export interface ApiModule {
  /** The import specifier of the entry that exports it: `distvae`, `distvae/plan`, … */
  entry: string;
  /** Path relative to `src/`, e.g. `plan/planner.ts`. */
  path: string;
  /** The module's header comment (what it owns). */
  header: string;
  entries: ApiEntry[];
}

/** The public entries in package.json's `exports` (Node's, not the page's), root first, as import specifiers and source files. */
export function publicEntries(root: string, pkg: { name: string; exports: Record<string, unknown> }): { entry: string; file: string }[] {
  return Object.entries(pkg.exports)
    .filter(([key, target]) => key !== './web' && typeof target === 'object' && target !== null)
    .map(([key, target]) => ({
      entry: key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`,
      file: `${root}/src/${(target as { default: string }).default.slice('./dist/'.length).replace(/\.js$/, '.ts')}`,
    }));
}

export function readApi(indexFile: string, entry = 'distvae'): ApiModule[] {
  const program = ts.createProgram([indexFile], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const index = program.getSourceFile(indexFile);
  if (!index) throw new Error(`cannot read ${indexFile}`);
  const srcDir = indexFile.replace(/[/\\](entries[/\\])?[^/\\]+$/, '');
  const modules = new Map<string, { header: string; entries: { entry: ApiEntry; position: number }[] }>();
  const seen = new Set<string>();

  for (const statement of index.statements) {
    if (!ts.isExportDeclaration(statement) || !statement.moduleSpecifier) continue;
    const moduleSymbol = checker.getSymbolAtLocation(statement.moduleSpecifier);
    const declared = moduleSymbol?.valueDeclaration ?? moduleSymbol?.declarations?.[0];
    if (!moduleSymbol || !declared || !ts.isSourceFile(declared))
      throw new Error(`cannot resolve ${statement.moduleSpecifier.getText(index)} in ${indexFile}`);
    const names =
      statement.exportClause && ts.isNamedExports(statement.exportClause)
        ? statement.exportClause.elements.map((e) => (e.propertyName ?? e.name).text)
        : null;
    const exported = checker.getExportsOfModule(moduleSymbol).filter((s) => names === null || names.includes(s.name));
    for (const symbol of exported) {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const declarations = target.declarations ?? [];
      const file = declarations[0]?.getSourceFile();
      if (!file || seen.has(symbol.name)) continue;
      seen.add(symbol.name);
      const path = relative(srcDir, file.fileName).split('\\').join('/');
      let mod = modules.get(path);
      if (!mod) modules.set(path, (mod = { header: headerComment(file), entries: [] }));
      const entry = describe(symbol.name, declarations, target, checker);
      if (entry) mod.entries.push({ entry, position: declarations[0]!.getStart() });
    }
  }
  // Within a module, entries follow the source (the order its author explains things in).
  return [...modules].map(([path, m]) => ({
    entry,
    path,
    header: m.header,
    entries: m.entries.sort((a, b) => a.position - b.position).map((e) => e.entry),
  }));
}

/** The `//` comment lines at the top of a file, joined into paragraphs. */
function headerComment(file: ts.SourceFile): string {
  const lines: string[] = [];
  for (const line of file.getFullText().split('\n')) {
    const m = /^\/\/ ?(.*)$/.exec(line.trim());
    if (!m) break;
    lines.push(m[1]!);
  }
  return lines.join(' ').trim();
}

function describe(name: string, declarations: ts.Declaration[], symbol: ts.Symbol, checker: ts.TypeChecker): ApiEntry | null {
  const first = declarations[0]!;
  const doc = docOf(symbol, first, checker);
  if (ts.isFunctionDeclaration(first)) {
    const withBody = declarations.filter(ts.isFunctionDeclaration);
    // Overloads: show the signatures, not the implementation's.
    const shown = withBody.length > 1 ? withBody.filter((d) => !d.body) : withBody;
    return { name, kind: 'function', doc, signature: shown.map((d) => headText(d, d.body)).join('\n') };
  }
  if (ts.isInterfaceDeclaration(first))
    return { name, kind: 'interface', doc, signature: declarations.map((d) => stripExport(d.getText())).join('\n') };
  if (ts.isTypeAliasDeclaration(first)) return { name, kind: 'type', doc, signature: stripExport(first.getText()) };
  if (ts.isEnumDeclaration(first)) return { name, kind: 'enum', doc, signature: stripExport(first.getText()) };
  if (ts.isClassDeclaration(first)) return { name, kind: 'class', doc, signature: classOutline(first) };
  if (ts.isVariableDeclaration(first)) {
    const type = first.type
      ? first.type.getText()
      : checker.typeToString(checker.getTypeOfSymbolAtLocation(symbol, first), undefined, ts.TypeFormatFlags.NoTruncation);
    return { name, kind: 'const', doc, signature: `const ${name}: ${type}` };
  }
  return null;
}

function docOf(symbol: ts.Symbol, declaration: ts.Declaration, checker: ts.TypeChecker): string {
  const main = ts.displayPartsToString(symbol.getDocumentationComment(checker));
  const tags = ts
    .getJSDocTags(declaration)
    .filter((t) => t.tagName.text !== 'internal')
    .map((t) => `@${t.tagName.text} ${ts.getTextOfJSDocComment(t.comment) ?? ''}`.trim());
  return [main, ...tags].filter((s) => s.length > 0).join('\n');
}

function stripExport(text: string): string {
  return text.replace(/^export\s+(default\s+)?/, '');
}

/** Declaration text from its first token (after JSDoc) up to the body. */
function headText(node: ts.Node, body: ts.Node | undefined): string {
  const file = node.getSourceFile();
  const end = body ? body.getStart() : node.getEnd();
  return stripExport(file.text.slice(node.getStart(), end).trim().replace(/;$/, ''));
}

function classOutline(node: ts.ClassDeclaration): string {
  const members = node.members
    .filter(
      (m) =>
        !(ts.getCombinedModifierFlags(m) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) &&
        !(m.name && ts.isPrivateIdentifier(m.name)),
    )
    .map((m) => {
      const body =
        ts.isConstructorDeclaration(m) || ts.isMethodDeclaration(m) || ts.isGetAccessor(m) || ts.isSetAccessor(m) ? m.body : undefined;
      return `  ${headText(m, body).replace(/\s*\n\s*/g, ' ')}`;
    });
  const heritage = node.heritageClauses?.map((h) => ` ${h.getText()}`).join('') ?? '';
  return `class ${node.name?.text ?? ''}${heritage} {\n${members.join('\n')}\n}`;
}

/** The reference as HTML: a contents list, then one section per module, one entry per export. */
export function renderApi(modules: ApiModule[]): string {
  const names = new Set(modules.flatMap((m) => m.entries.map((e) => e.name)));
  // Exported names in code (not in comments) link to their entries.
  const linkNames = (escaped: string, self: string) =>
    escaped
      .split(/(\/\*[\s\S]*?\*\/|\/\/[^\n]*)/)
      .map((part, i) =>
        i % 2 === 1
          ? part
          : part.replace(/\b[A-Za-z_][A-Za-z0-9_]*\b/g, (word) =>
              names.has(word) && word !== self ? `<a href="#api-${word}">${word}</a>` : word,
            ),
      )
      .join('');
  const entryHeading = (m: ApiModule, i: number) => (i === 0 || modules[i - 1]!.entry !== m.entry ? m.entry : null);
  const contents = modules
    .map((m, i) => {
      const heading = entryHeading(m, i);
      return (
        (heading ? `${i > 0 ? '</ul></li>' : ''}<li><a href="#entry-${slugOf(heading)}"><code>${escapeXml(heading)}</code></a><ul>` : '') +
        `<li><a href="#module-${slugOf(m.entry)}-${slugOf(m.path)}"><code>${escapeXml(m.path)}</code></a>: ${m.entries.map((e) => `<a href="#api-${e.name}"><code>${e.name}</code></a>`).join(', ')}</li>`
      );
    })
    .join('');
  const sections = modules.map((m, i) => {
    const heading = entryHeading(m, i);
    const entries = m.entries.map(
      (e) =>
        `<section class="api-entry" id="api-${e.name}"><h3><code>${e.name}</code> <span class="api-kind">${e.kind}</span></h3>` +
        `<pre class="api-signature"><code>${linkNames(escapeXml(e.signature), e.name)}</code></pre>` +
        (e.doc ? `<p class="api-doc">${prose(e.doc).replace(/\n/g, '<br>')}</p>` : '') +
        `</section>`,
    );
    return (
      (heading ? `<h2 class="api-entry-name" id="entry-${slugOf(heading)}"><code>import … from '${escapeXml(heading)}'</code></h2>` : '') +
      `<section class="api-module" id="module-${slugOf(m.entry)}-${slugOf(m.path)}"><h2><code>${escapeXml(m.path)}</code></h2>${m.header ? `<p>${prose(m.header)}</p>` : ''}${entries.join('')}</section>`
    );
  });
  return `<nav class="api-contents" aria-label="Modules"><ul>${contents}${modules.length > 0 ? '</ul></li>' : ''}</ul></nav>${sections.join('')}`;
}

/** Comment text as HTML: escaped, with `backticks` as code. */
function prose(text: string): string {
  return escapeXml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

function slugOf(path: string): string {
  return path.replace(/\.ts$/, '').replace(/[^A-Za-z0-9]+/g, '-');
}
