import type { IntegrationContext, IntegrationModule } from '../integrations/integration.ts';
import type { Config } from './config.ts';
import { createSlackModule } from '../integrations/slack/slack-module.ts';
import { createGitHubModule } from '../integrations/github/github-module.ts';

/**
 * Builds the integrations the config enables. Part of the composition root: each integration adds
 * one block here, reading only its own part of the config.
 */
export async function buildIntegrations(config: Config, context: IntegrationContext): Promise<IntegrationModule[]> {
  const modules: IntegrationModule[] = [];
  if (config.slack) modules.push(createSlackModule({ config: config.slack, context }));
  if (config.github) modules.push(await createGitHubModule(config.github, context));
  void config;
  void context;
  return modules;
}
