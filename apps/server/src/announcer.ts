// A typed announcement: a part says what happened and the composition root (server.ts) decides
// who hears it, so storage never calls dispatch or the sockets (bullmq's Worker emits
// `completed`; socket.io types its listener maps the same way).
// Unlike Node's EventEmitter, listeners are awaited in the order they were added: a turn's writer
// returns only once its events are relayed, and a listener's failure is the writer's failure.

/** Event name → the arguments its listeners get. */
export type AnnouncementMap = Record<string, unknown[]>;

type Listener<Arguments extends unknown[]> = (...args: Arguments) => unknown;

export class Announcer<Events extends AnnouncementMap> {
  private readonly listeners: { [Name in keyof Events]?: Array<Listener<Events[Name]>> } = {};

  /**
   * Adds a listener; a returned promise is awaited before the next listener runs.
   * @example store.on("finished", (turn) => metrics.turnsFinished.inc({ status: turn.status }));
   */
  on<Name extends keyof Events>(name: Name, listener: Listener<Events[Name]>): this {
    const list = this.listeners[name] ?? [];
    list.push(listener);
    this.listeners[name] = list;
    return this;
  }

  /** Runs the listeners of `name` one after another; rejects with the first failure. */
  protected async announce<Name extends keyof Events>(
    name: Name,
    ...args: Events[Name]
  ): Promise<void> {
    for (const listener of this.listeners[name] ?? []) await listener(...args);
  }
}
