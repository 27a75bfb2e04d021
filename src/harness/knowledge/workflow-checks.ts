import { parseWorkflowYaml, type YamlValue } from './workflow-yaml.ts';

export type WorkflowCommand = { name: 'install' | 'test' | 'lint' | 'typecheck' | 'build'; command: string };

/**
 * The setup and check commands a GitHub Actions workflow runs for a pull request: only workflows
 * that run on `pull_request` or `push`, only jobs that do not deploy (no `environment:`, no
 * deploy/release/publish in their id or name, not a reusable workflow) and run on Linux, and only
 * `run:` lines that install, test, lint, typecheck or build. Deploy, release, publish, cloud-CLI,
 * container, infrastructure and git-push commands never become checks, whatever else the line says.
 */
export function workflowChecks(yaml: string): WorkflowCommand[] {
  const doc = asMap(parseWorkflowYaml(yaml));
  if (!doc || !runsOnChanges(doc.on ?? doc.true ?? null)) return [];
  const found: WorkflowCommand[] = [];
  for (const [id, value] of Object.entries(asMap(doc.jobs ?? null) ?? {})) {
    const job = asMap(value);
    if (!job || !checksJob(id, job)) continue;
    for (const step of Array.isArray(job.steps) ? job.steps : []) {
      const s = asMap(step);
      if (!s || typeof s.run !== 'string' || (typeof s.shell === 'string' && !/^(bash|sh)\b/.test(s.shell))) continue;
      if (typeof s.name === 'string' && excludedName.test(s.name)) continue;
      const dir =
        typeof s['working-directory'] === 'string' && !s['working-directory'].includes('${{')
          ? s['working-directory']
          : undefined;
      const lines = commandLines(s.run);
      for (const line of lines) {
        // A one-command step the classifier cannot place is named by its step ("Run tests": `npm run unit`).
        const name =
          classifyCommand(line) ??
          (lines.length === 1 && typeof s.name === 'string' ? classifyStep(s.name, line) : undefined);
        if (!name) continue;
        const command = dir && dir !== '.' ? `cd ${dir} && ${line}` : line;
        if (!found.some((f) => f.command === command)) found.push({ name, command });
      }
    }
  }
  return found;
}

const excludedName = /\b(deploy|deployment|release|publish|upload|push (the )?image|docker|container image)\b/i;

function asMap(value: YamlValue | undefined): { [key: string]: YamlValue } | undefined {
  return value && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
}

/** `on:` names `push` or `pull_request` (as a string, a list or a mapping). */
function runsOnChanges(on: YamlValue): boolean {
  const events =
    typeof on === 'string'
      ? [on]
      : Array.isArray(on)
        ? on.filter((e): e is string => typeof e === 'string')
        : Object.keys(asMap(on) ?? {});
  return events.some((e) => e === 'push' || e === 'pull_request');
}

function checksJob(id: string, job: { [key: string]: YamlValue }): boolean {
  if (typeof job.uses === 'string' || job.environment !== undefined) return false;
  if (excludedName.test(id.replace(/[-_]/g, ' ')) || (typeof job.name === 'string' && excludedName.test(job.name)))
    return false;
  const runsOn = typeof job['runs-on'] === 'string' ? job['runs-on'] : '';
  return !/^(windows|macos)/i.test(runsOn);
}

/** A `run:` script as single commands: comments dropped, `\` continuations joined, `${{ }}` lines left out. */
function commandLines(script: string): string[] {
  const joined = script.replace(/\\\n\s*/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#') && !l.includes('${{'));
}

const install =
  /^(npm (ci|install|i)\b|yarn( install\b|$)|pnpm (install|i)|bun install|(python3? -m )?pip3? install|poetry install|uv sync|pipenv install|bundle install|go mod download|composer install|mix deps\.get|cargo fetch)\b/;
// Anything that leaves the machine or changes infrastructure; checked before what a line runs.
const never =
  /(^|[\s;&|(])(sudo|docker|podman|buildah|kubectl|helm|kustomize|kompose|terraform|pulumi|ansible(-playbook)?|aws|gcloud|gsutil|az|flyctl|heroku|vercel|netlify|firebase|wrangler|cosign|twine|gh|curl|wget|scp|rsync|ssh|apt(-get)?|brew|snap|choco)\b|\b(npm|yarn|pnpm) publish\b|\bcargo publish\b|\bgem push\b|\bgit (push|tag|commit)\b|\bsemantic-release\b|\bchangeset publish\b|\bmvn\b.*\bdeploy\b|\bgradlew?\b.*\bpublish/;

/** Which check a workflow command is, if any (exported for the table test). */
export function classifyCommand(line: string): WorkflowCommand['name'] | undefined {
  const command = line.replace(/^(env \S+=\S+ |[A-Z_]+=\S+ )+/, '');
  if (never.test(command)) return undefined;
  if (install.test(command) || /^if \[ -f [\w.-]+ \]; then (pip3? install|npm ci)/.test(command)) return 'install';
  if (/\b(tsc|type-?check|check-types|typecheck|mypy|pyright)\b/.test(command)) return 'typecheck';
  if (
    /\b(lint|eslint|ruff|flake8|pylint|clippy|golangci-lint|go vet|rubocop|shellcheck|prettier --check|black --check|biome (check|ci)|composer validate|cargo fmt\b.*--check)/.test(
      command,
    )
  )
    return 'lint';
  if (
    /\b((npm|yarn|pnpm|bun)( run)? test|pytest|python3? -m (pytest|unittest)|manage\.py test|go test|cargo test|mix test|deno test|node --test|jest|vitest|mocha|tox|nox|rspec|rake|phpunit|ctest|make (\S*test\S*|check|distcheck)|meson test|node [\w./-]*test[\w.-]*\.[cm]?[jt]s|mvn\b.*\b(test|verify)|gradlew?\b.*\b(test|check))\b/.test(
      command,
    )
  )
    return 'test';
  if (
    /\b((npm|yarn|pnpm|bun) run build|cargo build|go build|mvn\b.*\bpackage|gradlew?\b.*\bbuild|make|ninja)\b/.test(
      command,
    ) ||
    /^(\.\/configure|meson (setup )?[\w./-]+$)/.test(command)
  )
    return 'build';
  return undefined;
}

/** A step's name says what its one command checks; only for commands that run a project script. */
function classifyStep(name: string, line: string): WorkflowCommand['name'] | undefined {
  if (
    never.test(line) ||
    install.test(line) ||
    !/^((npm|pnpm|bun) run|yarn|make|just|task|\.\/[\w./-]+)\s/.test(`${line} `)
  )
    return undefined;
  if (/\btests?\b/i.test(name)) return 'test';
  if (/\blint/i.test(name)) return 'lint';
  if (/\btype/i.test(name)) return 'typecheck';
  if (/\b(build|compile)\b/i.test(name)) return 'build';
  return undefined;
}
