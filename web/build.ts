import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

/** The page's script and stylesheet, with a content hash for cache busting. */
export type WebBundle = { js: string; css: string; version: string };

const webDir = dirname(fileURLToPath(import.meta.url));

/**
 * Zod's messages in English only. `import { z } from 'zod'` (how src/core imports it) makes esbuild
 * keep the whole namespace, with `z.locales` and its forty-odd languages: 250 KiB of the page's
 * script. The page never picks a locale, and English is the one zod configures itself with.
 */
const englishZod: Plugin = {
  name: 'english-zod',
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: "export { default as en } from './en.js';",
      loader: 'js',
      resolveDir: dirname(args.path),
    }));
  },
};

/**
 * Bundles the typed client (web/src) with esbuild: Preact and the page's modules in one minified
 * script, its CSS in one stylesheet. Takes a fraction of a second, so the server does it at start
 * and there is no build output to go stale; `node web/build.ts <dir>` writes the files instead.
 */
export async function buildWebBundle(): Promise<WebBundle> {
  const result = await build({
    entryPoints: [join(webDir, 'src/main.tsx')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: 'out',
    logLevel: 'silent',
    plugins: [englishZod],
  });
  const file = (ext: string) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? '';
  const js = file('.js');
  const css = file('.css');
  const version = createHash('sha256').update(js).update(css).digest('hex').slice(0, 12);
  return { js, css, version };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = process.argv[2] ?? join(webDir, 'dist');
  const bundle = await buildWebBundle();
  await mkdir(out, { recursive: true });
  await writeFile(join(out, 'app.js'), bundle.js);
  await writeFile(join(out, 'app.css'), bundle.css);
  console.log(
    `web: ${out}/app.js ${(bundle.js.length / 1024).toFixed(1)} KiB, app.css ${(bundle.css.length / 1024).toFixed(1)} KiB`,
  );
}
