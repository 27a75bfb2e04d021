import type { Migration, MigrationProvider } from 'kysely/migration';
import * as m001 from './001-sessions.ts';
import * as m002 from './002-thread-delivery.ts';
import * as m003 from './003-slack.ts';
import * as m004 from './004-github.ts';
import * as m005 from './005-inbound-deliveries.ts';
import * as m006 from './006-harness.ts';
import * as m007 from './007-linear.ts';
import * as m008 from './008-github-ci.ts';
import * as m009 from './009-linear-inbound.ts';
import * as m010 from './010-ordered-deliveries.ts';
import * as m011 from './011-modal-sandboxes.ts';
import * as m012 from './012-modal-templates.ts';
import * as m013 from './013-scale-out.ts';
import * as m014 from './014-delivery-retention.ts';
import * as m015 from './015-checkpoint-increments.ts';
import * as m016 from './016-linear-refresh-tokens.ts';
import * as m017 from './017-page-sessions.ts';
import * as m018 from './018-run-leases.ts';
import * as m019 from './019-pull-outcomes.ts';
import * as m020 from './020-session-artifacts.ts';
import * as m021 from './021-attachment-sources.ts';
import * as m022 from './022-glossary-names.ts';
import * as m023 from './023-subtasks.ts';
import * as m024 from './024-github-repo-features.ts';
import * as m025 from './025-codex-signins.ts';
import * as m026 from './026-github-comment-intent.ts';
import * as m027 from './027-modal-sandbox-roles.ts';

/**
 * Migrations in order, one number each. Add new ones here; never edit one that has shipped. A
 * migration renamed after it shipped keeps its old name in `renamedMigrations`
 * (migration-names.ts), which rewrites what databases recorded before the migrator runs.
 */
export const migrationProvider: MigrationProvider = {
  async getMigrations(): Promise<Record<string, Migration>> {
    return {
      '001-sessions': m001,
      '002-thread-delivery': m002,
      '003-slack': m003,
      '004-github': m004,
      '005-inbound-deliveries': m005,
      '006-harness': m006,
      '007-linear': m007,
      '008-github-ci': m008,
      '009-linear-inbound': m009,
      '010-ordered-deliveries': m010,
      '011-modal-sandboxes': m011,
      '012-modal-templates': m012,
      '013-scale-out': m013,
      '014-delivery-retention': m014,
      '015-checkpoint-increments': m015,
      '016-linear-refresh-tokens': m016,
      '017-page-sessions': m017,
      '018-run-leases': m018,
      '019-pull-outcomes': m019,
      '020-session-artifacts': m020,
      '021-attachment-sources': m021,
      '022-glossary-names': m022,
      '023-subtasks': m023,
      '024-github-repo-features': m024,
      '025-codex-signins': m025,
      '026-github-comment-intent': m026,
      '027-modal-sandbox-roles': m027,
    };
  },
};
