import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyCommand, workflowChecks } from '../../src/harness/knowledge/workflow-checks.ts';
import { extractKnowledge } from '../../src/harness/knowledge/extract-knowledge.ts';

const corpus = join(import.meta.dirname, '..', 'fixtures', 'workflows');

/**
 * Each vendored workflow (see test/fixtures/workflows/SOURCES.md for where it came from) and the
 * commands Patchbay takes from it: deploy, release, publish, Pages, container and cloud workflows
 * give none; CI workflows give their install, test, lint, typecheck and build steps.
 */
const expected: [string, [string, string][]][] = [
  [
    'bubblewrap-check.yml',
    [
      ['build', 'meson _build'],
      ['build', 'ninja -C _build -v'],
      ['test', 'BWRAP_MUST_WORK=1 meson test -C _build'],
      ['build', 'ninja -C tests/use-as-subproject/_build -v'],
      ['test', 'meson test -C tests/use-as-subproject/_build'],
    ],
  ],
  ['cobra-test.yml', [['test', 'RICHGO_FORCE_COLOR=1 PATH=$HOME/go/bin/:$PATH make richtest']]],
  [
    'express-ci.yml',
    [
      ['install', 'npm install --ignore-scripts --include=dev'],
      ['lint', 'npm run lint'],
      ['install', 'npm install'],
      ['test', 'npm run test-ci'],
    ],
  ],
  [
    'fastify-ci.yml',
    [
      ['install', 'npm install --ignore-scripts'],
      ['test', 'npm run unit'],
      ['test', 'npm run test:types'],
      ['test', 'cd test/bundler/webpack && npm run test'],
      ['test', 'cd test/bundler/esbuild && npm run test'],
    ],
  ],
  ['fastify-website.yml', []],
  ['flask-publish.yaml', []],
  [
    'flask-tests.yaml',
    [
      ['test', 'uv run --locked --no-default-groups --group dev tox run'],
      ['test', 'uv run --locked --no-default-groups --group dev tox run -e typing'],
    ],
  ],
  [
    'ripgrep-ci.yml',
    [
      ['build', 'cargo build --verbose'],
      ['lint', 'cargo fmt --all --check'],
    ],
  ],
  ['ripgrep-release.yml', []],
  [
    'starter-ci-c-cpp.yml',
    [
      ['build', './configure'],
      ['build', 'make'],
      ['test', 'make check'],
      ['test', 'make distcheck'],
    ],
  ],
  [
    'starter-ci-deno.yml',
    [
      ['lint', 'deno lint'],
      ['test', 'deno test -A'],
    ],
  ],
  [
    'starter-ci-django.yml',
    [
      ['install', 'python -m pip install --upgrade pip'],
      ['install', 'pip install -r requirements.txt'],
      ['test', 'python manage.py test'],
    ],
  ],
  ['starter-ci-docker-image.yml', []],
  ['starter-ci-docker-publish.yml', []],
  [
    'starter-ci-elixir.yml',
    [
      ['install', 'mix deps.get'],
      ['test', 'mix test'],
    ],
  ],
  ['starter-ci-gem-push.yml', []],
  [
    'starter-ci-go.yml',
    [
      ['build', 'go build -v ./...'],
      ['test', 'go test -v ./...'],
    ],
  ],
  ['starter-ci-gradle.yml', [['build', './gradlew build']]],
  [
    'starter-ci-makefile.yml',
    [
      ['build', './configure'],
      ['build', 'make'],
      ['test', 'make check'],
      ['test', 'make distcheck'],
    ],
  ],
  ['starter-ci-maven.yml', [['build', 'mvn -B package --file pom.xml']]],
  [
    'starter-ci-node.js.yml',
    [
      ['install', 'npm ci'],
      ['build', 'npm run build --if-present'],
      ['test', 'npm test'],
    ],
  ],
  ['starter-ci-npm-publish.yml', []],
  [
    'starter-ci-php.yml',
    [
      ['lint', 'composer validate --strict'],
      ['install', 'composer install --prefer-dist --no-progress'],
    ],
  ],
  [
    'starter-ci-pylint.yml',
    [
      ['install', 'python -m pip install --upgrade pip'],
      ['install', 'pip install pylint'],
      ['lint', "pylint $(git ls-files '*.py')"],
    ],
  ],
  [
    'starter-ci-python-app.yml',
    [
      ['install', 'python -m pip install --upgrade pip'],
      ['install', 'pip install flake8 pytest'],
      ['install', 'if [ -f requirements.txt ]; then pip install -r requirements.txt; fi'],
      ['lint', 'flake8 . --count --select=E9,F63,F7,F82 --show-source --statistics'],
      ['lint', 'flake8 . --count --exit-zero --max-complexity=10 --max-line-length=127 --statistics'],
      ['test', 'pytest'],
    ],
  ],
  [
    'starter-ci-python-package.yml',
    [
      ['install', 'python -m pip install --upgrade pip'],
      ['install', 'python -m pip install flake8 pytest'],
      ['install', 'if [ -f requirements.txt ]; then pip install -r requirements.txt; fi'],
      ['lint', 'flake8 . --count --select=E9,F63,F7,F82 --show-source --statistics'],
      ['lint', 'flake8 . --count --exit-zero --max-complexity=10 --max-line-length=127 --statistics'],
      ['test', 'pytest'],
    ],
  ],
  ['starter-ci-python-publish.yml', []],
  ['starter-ci-ruby.yml', [['test', 'bundle exec rake']]],
  [
    'starter-ci-rust.yml',
    [
      ['build', 'cargo build --verbose'],
      ['test', 'cargo test --verbose'],
    ],
  ],
  ['starter-deploy-aws.yml', []],
  ['starter-deploy-azure-kubernetes-service.yml', []],
  [
    'starter-deploy-azure-webapps-node.yml',
    [
      ['install', 'npm install'],
      ['build', 'npm run build --if-present'],
      ['test', 'npm run test --if-present'],
    ],
  ],
  ['starter-deploy-google.yml', []],
  ['starter-deploy-terraform.yml', []],
  ['starter-pages-hugo.yml', []],
  ['starter-pages-nextjs.yml', []],
];

describe('checks read from CI configuration: a corpus of real workflows', () => {
  it('holds at least 30 workflows, each listed in SOURCES.md', () => {
    const sources = readFileSync(join(corpus, 'SOURCES.md'), 'utf8');
    expect(expected.length).toBeGreaterThanOrEqual(30);
    for (const [file] of expected) expect(sources).toContain(`| \`${file}\` |`);
  });

  it.each(expected)('%s', (file, commands) => {
    expect(workflowChecks(readFileSync(join(corpus, file), 'utf8')).map((c) => [c.name, c.command])).toEqual(commands);
  });

  it.each([
    ['aws s3 sync ./build s3://bucket', undefined],
    ['docker build -t app .', undefined],
    ['docker push ghcr.io/o/app:latest', undefined],
    ['gcloud run deploy app --source .', undefined],
    ['terraform plan -input=false', undefined],
    ['kubectl apply -f k8s/', undefined],
    ['npm publish --provenance', undefined],
    ['npx semantic-release', undefined],
    ['git push origin HEAD:gh-pages', undefined],
    ['npm test && npm publish', undefined],
    ['vercel deploy --prod --token=x', undefined],
    ['npm ci', 'install'],
    ['npm run lint', 'lint'],
    ['npx tsc --noEmit', 'typecheck'],
    ['pytest -q', 'test'],
    ['yarn test', 'test'],
    ['cargo build --release', 'build'],
    ['echo done', undefined],
  ] as const)('%s → %s', (line, name) => expect(classifyCommand(line)).toBe(name));

  it('takes nothing from a workflow that does not run on push or pull_request, nor from a deploy job', () => {
    const onRelease =
      'on:\n  release:\n    types: [published]\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: npm test\n';
    expect(workflowChecks(onRelease)).toEqual([]);
    const deployJob =
      'on: [push]\njobs:\n  deploy:\n    runs-on: ubuntu-latest\n    steps:\n      - run: npm test\n  ship:\n    environment: production\n    runs-on: ubuntu-latest\n    steps:\n      - run: npm run build\n';
    expect(workflowChecks(deployJob)).toEqual([]);
  });

  it('feeds the knowledge document: CI steps fill names the package scripts did not', () => {
    const doc = extractKnowledge(
      new Map([
        ['.github/workflows/ci.yml', readFileSync(join(corpus, 'starter-ci-python-app.yml'), 'utf8')],
        ['.github/workflows/deploy.yml', readFileSync(join(corpus, 'starter-deploy-aws.yml'), 'utf8')],
      ]),
    );
    expect(doc.setup.map((c) => c.command)).toEqual(['python -m pip install --upgrade pip']);
    expect(doc.checks.map((c) => [c.name, c.command, c.source])).toEqual([
      ['lint', 'flake8 . --count --select=E9,F63,F7,F82 --show-source --statistics', '.github/workflows/ci.yml'],
      ['test', 'pytest', '.github/workflows/ci.yml'],
    ]);
  });
});
