import type { IntegrationContext, IntegrationModule } from '../integrations/integration-module.ts';
import type { Config } from './config.ts';
import { repoUrl } from './core/repo-ref.ts';
import { createSlackModule } from '../integrations/slack/slack-module.ts';
import { createGitHubModule } from '../integrations/github/github-module.ts';
import { createSecretBox } from '../integrations/github/secret-box.ts';
import { createLinearModule } from '../integrations/linear/linear-module.ts';

/**
 * Builds the integrations the config enables. Part of the composition root: each integration adds
 * one block here, reading only its own part of the config.
 */
export async function buildIntegrations(config: Config, context: IntegrationContext): Promise<IntegrationModule[]> {
  const modules: IntegrationModule[] = [];
  const github = config.github ? await createGitHubModule(config.github, context) : undefined;
  if (github) modules.push(github);
  if (config.slack) {
    // Slack sessions name repos the way the GitHub integration parses them (GITHUB_GIT_URL), so its PRs and tokens apply.
    const gitUrl = config.github?.gitUrl ?? 'https://github.com';
    modules.push(
      createSlackModule({
        config: config.slack,
        context,
        gitUrl,
        repoUrlFor: (owner, repo) => repoUrl(gitUrl, { owner, repo }),
        // Links people paste name that host (GitHub Enterprise, or github.com).
        repoHosts: [new URL(gitUrl).host],
        ...(github?.signInLink && { signInLink: github.signInLink }),
      }),
    );
  }
  if (config.linear) {
    // Linear sessions name repos the way the GitHub integration parses them, so its PRs and tokens apply.
    const gitUrl = config.github?.gitUrl ?? 'https://github.com';
    const secretKey = config.linear.secretKey;
    modules.push(
      createLinearModule({
        config: config.linear,
        context,
        repos: {
          gitUrl,
          repoUrl: (repo) => repoUrl(gitUrl, repo),
          installed: async () => (github ? github.installedRepos() : []),
        },
        ...(secretKey && { box: createSecretBox(secretKey) }),
      }),
    );
  }
  return modules;
}
