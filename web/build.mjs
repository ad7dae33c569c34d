// Builds the front-end into ONE script and ONE stylesheet that the Go
// binary embeds (internal/htmlreport/assets). Deterministic: pinned esbuild
// (package-lock.json), no timestamps, no source maps, no legal comments, so
// `npm ci && npm run build` reproduces the committed bytes.
//
//   node build.mjs                 # writes ../internal/htmlreport/assets
//   node build.mjs --outdir DIR    # writes DIR (the Go test compares it)
import * as esbuild from 'esbuild';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const i = process.argv.indexOf('--outdir');
const outdir = i > 0 ? path.resolve(process.argv[i + 1]) : path.join(here, '..', 'internal', 'htmlreport', 'assets');
const common = { bundle: true, charset: 'utf8', legalComments: 'none', logLevel: 'warning', absWorkingDir: here };

await esbuild.build({ ...common, entryPoints: ['src/main.js'], format: 'iife', target: 'es2020', minify: true, outfile: path.join(outdir, 'app.js') });
await esbuild.build({ ...common, entryPoints: ['src/style.css'], minify: true, outfile: path.join(outdir, 'app.css') });
