import { readFileSync } from 'node:fs';
import { buildSchema, execute, parse, validate, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';

let cached: GraphQLSchema | undefined;

/** GitHub's published GraphQL schema (@octokit/graphql-schema), built once per process. */
export function githubGraphQLSchema(): GraphQLSchema {
  cached ??= buildSchema(
    readFileSync(new URL('./schema.graphql', import.meta.resolve('@octokit/graphql-schema')), 'utf8'),
    { assumeValidSDL: true },
  );
  return cached;
}

export type GraphQLAnswer = { status: number; body: { data?: unknown; errors?: { message: string; type?: string }[] } };

/**
 * Runs a GraphQL request the way GitHub answers it: a document that does not parse or does not
 * validate against the published schema gets its errors (HTTP 200 with `errors`, as GitHub does);
 * a valid one is executed with `mutations` resolving the top-level Mutation fields the fake knows.
 * A field the fake does not implement is an error, never a silent null.
 */
export async function runGitHubGraphQL(
  body: { query?: unknown; variables?: unknown },
  mutations: Record<string, (input: Record<string, unknown>) => unknown>,
): Promise<GraphQLAnswer> {
  if (typeof body.query !== 'string')
    return {
      status: 400,
      body: { errors: [{ message: 'A query attribute must be specified and must be a string.' }] },
    };
  let document: ReturnType<typeof parse>;
  try {
    document = parse(body.query);
  } catch (error) {
    return { status: 200, body: { errors: [{ message: (error as Error).message, type: 'PARSE_ERROR' }] } };
  }
  const schema = githubGraphQLSchema();
  const problems = validate(schema, document);
  if (problems.length) return { status: 200, body: { errors: problems.map((p) => ({ message: p.message })) } };
  const fieldResolver: GraphQLFieldResolver<unknown, unknown> = (source, args, _context, info) => {
    if (info.parentType.name === 'Mutation') {
      const handler = mutations[info.fieldName];
      if (!handler) throw new Error(`the fake does not implement mutation ${info.fieldName}`);
      return handler((args as { input: Record<string, unknown> }).input);
    }
    if (info.parentType.name === 'Query') throw new Error(`the fake does not implement query ${info.fieldName}`);
    return (source as Record<string, unknown>)[info.fieldName];
  };
  const result = await execute({
    schema,
    document,
    variableValues: (body.variables ?? {}) as Record<string, unknown>,
    fieldResolver,
  });
  return {
    status: 200,
    body: {
      ...(result.data !== undefined && { data: result.data }),
      ...(result.errors && { errors: result.errors.map((e) => ({ message: e.message, type: 'UNPROCESSABLE' })) }),
    },
  };
}
