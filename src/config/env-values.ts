import { z } from 'zod';

/** An empty variable counts as unset: `FOO=` in an env file is how people switch a setting off. */
export const emptyAsUndefined = (value: unknown) => (value === '' ? undefined : value);
export const optionalString = z.preprocess(emptyAsUndefined, z.string().optional());
export const positiveInt = (fallback: number) =>
  z.preprocess(emptyAsUndefined, z.coerce.number().int().positive().default(fallback));
