import type { ColumnType } from 'kysely';

/** Column types the table types share: a timestamp defaulted by the database, a counter, a JSON column. */
export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
export type Counter = ColumnType<number, number | undefined, number>;
/** JSON columns: written as JSON text (JSON.stringify), read back parsed. */
export type Json = ColumnType<unknown, string, string>;
