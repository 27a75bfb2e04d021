import type { Logger } from 'pino';
import type { SessionRecord } from '../core/session-record.ts';
import type { EventBus } from '../sessions/notify/event-bus.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';
import { EventsQuery, SeqParam } from './api-schemas.ts';
import type { EventPage } from './api-types.ts';
import { streamEvents } from './event-stream.ts';
import type { ApiServer } from './server.ts';

export type SessionEventRoutesDeps = {
  store: Pick<SessionStore, 'eventPage' | 'events'>;
  bus: Pick<EventBus, 'subscribe' | 'subscribeLive'>;
  log: Logger;
  keepAliveMs: number;
  /** The session or a not_found error. */
  mustGet: (id: string) => Promise<SessionRecord>;
  /** Streams open now, ended when the server closes. */
  openStreams: Set<() => void>;
};

/** A newest page when the caller asks for no size. */
const DEFAULT_PAGE = 100;

/**
 * `GET /api/sessions/:id/events`: a page of the log (`?before=&limit=`, newest first, with the
 * cursor of the page before it), the whole log after a seq as JSON (`?format=json&after=`), or the
 * Server-Sent Events stream from a seq (`?after=` or `Last-Event-ID`).
 */
export function registerSessionEventRoutes(app: ApiServer, deps: SessionEventRoutesDeps): void {
  const { store, bus, log } = deps;
  app.get<{ Params: { id: string } }>('/api/sessions/:id/events', async (request, reply) => {
    const query = EventsQuery.parse(request.query);
    const session = await deps.mustGet(request.params.id);
    if (query.before !== undefined || query.limit !== undefined) {
      const page = await store.eventPage(session.id, {
        limit: query.limit ?? DEFAULT_PAGE,
        ...(query.before !== undefined && { before: query.before }),
        ...(query.types && { types: query.types }),
      });
      return page satisfies EventPage;
    }
    const header = request.headers['last-event-id'];
    // A reconnecting EventSource sends Last-Event-ID and repeats the original URL, so the header wins.
    const afterSeq = header !== undefined ? SeqParam.parse(header) : (query.after ?? 0);
    if (query.format === 'json')
      return store.events(session.id, { afterSeq, ...(query.types && { types: query.types }) });

    reply.hijack();
    const close = streamEvents(reply.raw, {
      sessionId: session.id,
      afterSeq,
      store,
      bus,
      log: log.child({ sessionId: session.id }),
      keepAliveMs: deps.keepAliveMs,
    });
    deps.openStreams.add(close);
    reply.raw.on('close', () => deps.openStreams.delete(close));
    return reply;
  });
}
