/**
 * The layers of Patchbay and what each may import: the single source for `scripts/check-layers.ts`
 * (run by `.ci/run`) and for the layer table in README.md, which that script writes and checks.
 * A layer lists the layers it may import; everything else is an upward or sideways import and fails
 * the check, type imports included. Tests and benches may import anything.
 */
export type Layer = {
  name: string;
  /** Path prefixes relative to the repository root; `dir/` is a prefix, `dir/*.ts` the files directly in dir, `dir/*\/` makes each subfolder of dir a unit that may not import its siblings. */
  paths: string[];
  holds: string;
  mayImport: string[];
  /** npm packages the layer may import; all when absent. */
  packages?: string[];
};

export const layers: Layer[] = [
  {
    name: 'core',
    paths: ['src/core/'],
    holds:
      'the vocabulary (`SessionEvent`, `ThreadRef`, `Actor`, `Inbound`, `SessionRecord`, `PendingQuestion`, the transcript, status transitions, coded errors) and the ports (`RunLog`, `SessionLookup`, `DeliveryInbox`, `DeliveryInterpreter`, `ThreadReplier`, `Publisher`, `GitCredentials`)',
    mayImport: [],
    packages: ['zod'],
  },
  {
    name: 'models',
    paths: ['src/models/'],
    holds:
      '`ModelProvider.runTurn` and its adapters (Anthropic, OpenAI Responses, Chat Completions, OpenCode Zen, scripted), context budget',
    mayImport: ['core'],
  },
  {
    name: 'sandbox',
    paths: ['sandbox/'],
    holds:
      'the `Sandbox` port, the local bubblewrap sandbox, the egress proxy and its allowlist policy, the host process runner',
    mayImport: ['core'],
  },
  { name: 'db', paths: ['db/'], holds: 'Kysely database, embedded PostgreSQL, migrations', mayImport: ['core'] },
  {
    name: 'agent',
    paths: ['src/agent/'],
    holds: 'the runner loop (writes to the `RunLog` it is given), tool registry, tools, command policy, loop guard',
    mayImport: ['core', 'models', 'sandbox'],
  },
  {
    name: 'git',
    paths: ['src/git/'],
    holds: 'host-side git: mirrors, workspaces, commits, pushes',
    mayImport: ['core', 'sandbox'],
  },
  {
    name: 'engines',
    paths: ['src/engines/'],
    holds:
      'engines that run the agent as a CLI in the sandbox (Claude Code, Codex, OpenCode) and the host relay for their model traffic',
    mayImport: ['core', 'models', 'sandbox', 'agent'],
  },
  {
    name: 'harness',
    paths: ['src/harness/'],
    holds: 'the session blueprint around the agent: workspace, agent, ship changes, publishers',
    mayImport: ['core', 'agent', 'engines', 'git', 'models', 'sandbox'],
  },
  {
    name: 'sessions',
    paths: ['src/sessions/'],
    holds: 'session store, session service, durable queues, event bus, worker, thread notifier',
    mayImport: ['core', 'db', 'harness', 'agent', 'engines', 'git', 'models', 'sandbox'],
  },
  {
    name: 'integrations',
    paths: ['integrations/*.ts'],
    holds: 'what an integration gets from and gives the composition root',
    mayImport: ['core', 'db'],
  },
  {
    name: 'integrations/<name>',
    paths: ['integrations/*/'],
    holds:
      '`slack/`, `github/`, `linear/`: receive, interpret, reply, publish; their own tables. No integration imports another',
    mayImport: ['integrations', 'core', 'db', 'git'],
  },
  {
    name: 'api',
    paths: ['src/api/', 'web/'],
    holds: 'HTTP server: REST, SSE, web page',
    mayImport: ['core', 'models', 'sandbox', 'db', 'agent', 'engines', 'git', 'harness', 'sessions', 'integrations'],
  },
  {
    name: 'root',
    paths: [
      'src/main.ts',
      'src/start/',
      'src/cli.ts',
      'src/cli/',
      'src/config.ts',
      'src/config/',
      'src/logger.ts',
      'src/wire-integrations.ts',
    ],
    holds: 'composition root: the only place that reads the environment, builds clients and wires ports by name',
    mayImport: [
      'core',
      'models',
      'sandbox',
      'db',
      'agent',
      'engines',
      'git',
      'harness',
      'sessions',
      'integrations',
      'integrations/<name>',
      'api',
    ],
  },
];

/** Folders whose files are checked; `test/`, `bench/` and `scripts/` may import anything. */
export const checkedRoots = ['src', 'integrations', 'sandbox', 'db', 'web'];
