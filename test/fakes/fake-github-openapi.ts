import { createRequire } from 'node:module';
import { Ajv, type ValidateFunction } from 'ajv';

const require = createRequire(import.meta.url);

type Operation = {
  operationId: string;
  parameters?: ({ $ref: string } | Parameter)[];
  requestBody?: { required?: boolean; content: Record<string, { schema: unknown }> };
};
type Parameter = { name: string; in: string; required?: boolean; schema?: { type?: string; enum?: unknown[] } };
type Route = {
  method: string;
  template: string;
  pattern: RegExp;
  names: string[];
  literals: number;
  op: Operation;
  pointer: string;
};

export type SpecMatch = { operationId: string; template: string; params: Record<string, string> };

/**
 * GitHub's official REST description (@octokit/openapi, api.github.com), used by the fake to
 * refuse what GitHub would refuse: an unknown method or path, a malformed path parameter, a missing
 * required query parameter, or a body that does not match the operation's request schema.
 */
export function loadGitHubSpec() {
  const spec = require('@octokit/openapi/generated/api.github.com.json') as {
    paths: Record<string, Record<string, Operation>>;
    components: { parameters: Record<string, Parameter> };
  };
  const ajv = new Ajv({ strict: false, validateSchema: false, allErrors: true, validateFormats: false });
  ajv.addSchema(spec, 'gh');
  const compiled = new Map<string, ValidateFunction>();
  const routes: Route[] = [];
  for (const [template, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'patch', 'put', 'delete'].includes(method)) continue;
      const names: string[] = [];
      const pattern = new RegExp(
        `^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{([^}]+)\\?\}/g, (_m, name: string) => {
          names.push(name);
          return '([^/]+)';
        })}$`,
      );
      const literals = template.split('/').filter((s) => s && !s.startsWith('{')).length;
      const pointer = `#/paths/${template.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}`;
      routes.push({ method: method.toUpperCase(), template, pattern, names, literals, op, pointer });
    }
  }
  routes.sort((a, b) => b.literals - a.literals);

  const resolveParam = (p: { $ref: string } | Parameter): Parameter =>
    '$ref' in p ? spec.components.parameters[p.$ref.split('/').pop()!]! : p;

  return {
    /** The operation for a request, or an error message saying what GitHub would answer. */
    check(
      method: string,
      path: string,
      query: URLSearchParams,
      body: unknown,
    ): { ok: true; match: SpecMatch } | { ok: false; status: number; message: string } {
      const candidates = routes.filter((r) => r.pattern.test(path));
      if (candidates.length === 0) return { ok: false, status: 404, message: `no such path in the REST spec: ${path}` };
      const route = candidates.find((r) => r.method === method);
      if (!route)
        return { ok: false, status: 404, message: `${method} is not an operation on ${candidates[0]!.template}` };
      const values = route.pattern.exec(path)!.slice(1).map(decodeURIComponent);
      const params = Object.fromEntries(route.names.map((n, i) => [n, values[i]!]));
      for (const p of (route.op.parameters ?? []).map(resolveParam)) {
        if (p.in === 'path' && p.schema?.type === 'integer' && !/^\d+$/.test(params[p.name] ?? '')) {
          return { ok: false, status: 404, message: `path parameter ${p.name} must be an integer` };
        }
        if (p.in === 'query' && p.required && !query.has(p.name))
          return { ok: false, status: 422, message: `query parameter ${p.name} is required` };
        if (p.in === 'query' && query.has(p.name) && p.schema?.enum && !p.schema.enum.includes(query.get(p.name))) {
          return {
            ok: false,
            status: 422,
            message: `query parameter ${p.name} must be one of ${p.schema.enum.join(', ')}`,
          };
        }
      }
      const content = route.op.requestBody?.content?.['application/json'];
      if (content) {
        if (body === undefined && route.op.requestBody?.required)
          return { ok: false, status: 422, message: `${route.op.operationId} needs a JSON body` };
        if (body !== undefined) {
          const key = `${route.pointer}/requestBody/content/application~1json/schema`;
          let validate = compiled.get(key);
          if (!validate) {
            validate = ajv.compile({ $ref: `gh${key}` });
            compiled.set(key, validate);
          }
          if (!validate(body)) {
            return {
              ok: false,
              status: 422,
              message: `Invalid request for ${route.op.operationId}: ${ajv.errorsText(validate.errors)}`,
            };
          }
        }
      } else if (body !== undefined && method !== 'GET' && Object.keys(body as object).length > 0) {
        return { ok: false, status: 422, message: `${route.op.operationId} takes no body` };
      }
      return { ok: true, match: { operationId: route.op.operationId, template: route.template, params } };
    },
  };
}
