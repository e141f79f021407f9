// An async queue of events: lets callbacks (tool output, parallel tools) feed the generator.

/** Push from anywhere, iterate once with `for await`; iteration ends after `close()`. */
export class EventQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #closed = false;
  #wake: (() => void) | undefined;

  push(item: T): void {
    if (this.#closed) return;
    this.#items.push(item);
    this.#wake?.();
  }

  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    while (true) {
      if (this.#items.length > 0) {
        const items = this.#items;
        this.#items = [];
        yield* items;
        continue;
      }
      if (this.#closed) return;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
  }
}
