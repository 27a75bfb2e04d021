#!/usr/bin/env node
// The `patchbay` command: checks the Node version in plain JavaScript, then loads the TypeScript CLI.
import { readFileSync } from 'node:fs';
import { nodeVersionProblem } from './node-version.js';

const { engines } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const problem = nodeVersionProblem(process.versions.node, engines.node);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
await import('../src/cli.ts');
