import type { Migration, MigrationProvider } from 'kysely/migration';
import * as m001 from './001-sessions.ts';
import * as m002 from './002-thread-delivery.ts';
import * as m003 from './003-slack.ts';
import * as m004 from './004-github.ts';
import * as m005 from './005-inbound-deliveries.ts';
import * as m007 from './007-linear.ts';
import * as m006 from './006-harness.ts';
import * as m008 from './008-github-ci.ts';
import * as m009 from './009-linear-inbound.ts';
import * as m009b from './009-ordered-deliveries.ts';
import * as m010 from './010-modal-sandboxes.ts';
import * as m011 from './011-scale-out.ts';
import * as m010b from './010-modal-templates.ts';
import * as m012 from './012-delivery-retention.ts';
import * as m013 from './013-checkpoint-increments.ts';
import * as m014 from './014-linear-refresh-tokens.ts';
import * as m015 from './015-page-sessions.ts';
import * as m016 from './016-run-leases.ts';
import * as m017 from './017-pull-outcomes.ts';
import * as m018 from './018-session-artifacts.ts';
import * as m019 from './019-attachment-sources.ts';
import * as m020 from './020-glossary-names.ts';
import * as m021 from './021-subtasks.ts';
import * as m022 from './022-github-repo-features.ts';
import * as m023 from './023-codex-signins.ts';

/** Migrations in order. Add new ones here; never edit one that has shipped. */
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
      '009-ordered-deliveries': m009b,
      '010-modal-sandboxes': m010,
      '010-modal-templates': m010b,
      '011-scale-out': m011,
      '012-delivery-retention': m012,
      '013-checkpoint-increments': m013,
      '014-linear-refresh-tokens': m014,
      '015-page-sessions': m015,
      '016-run-leases': m016,
      '017-pull-outcomes': m017,
      '018-session-artifacts': m018,
      '019-attachment-sources': m019,
      '020-glossary-names': m020,
      '021-subtasks': m021,
      '022-github-repo-features': m022,
      '023-codex-signins': m023,
    };
  },
};
