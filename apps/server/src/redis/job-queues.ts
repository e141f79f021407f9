// The BullMQ queues and workers of one server instance (dispatch, webhooks): one key prefix, their
// connections from RedisConnections, errors logged, one close. Which function processes a queue's
// jobs is the composition root's to say, as bullmq's `new Worker(name, processor, opts)` has it.
import type { Logger } from "@gadget/logging";
import { type Processor, Queue, Worker } from "bullmq";
import type { RedisConnections } from "./connections.ts";
import { queuePrefix } from "./key-space.ts";

export interface JobQueuesOptions {
  /** GADGET_REDIS_PREFIX: queue `name`'s keys start with `{<redisPrefix>:bull:<name>}` (key-space.ts). */
  redisPrefix: string;
  logger: Logger;
}

export class JobQueues {
  private readonly queues: Queue[] = [];
  private readonly workers = new Map<string, Worker>();

  constructor(
    private readonly connections: RedisConnections,
    private readonly options: JobQueuesOptions,
  ) {}

  /**
   * The queue `name`, to add jobs to (a worker of any server takes them).
   * @example const queue = jobs.queue<DispatchJob>("dispatch"); await queue.add("dispatch", { turnId }, { jobId: turnId });
   */
  queue<Data>(name: string): Queue<Data> {
    const queue = new Queue<Data>(name, {
      connection: this.connections.forJobs(name),
      prefix: queuePrefix(this.options.redisPrefix, name),
    });
    this.queues.push(queue as Queue);
    return queue;
  }

  /**
   * Processes the jobs of queue `name` on this server with `processor`: it resolves (done), or
   * throws (retried as the job's options say; never for an UnrecoverableError).
   * @example jobs.work("dispatch", (job) => dispatcher.process(job.data), { concurrency: 8 });
   */
  work<Data>(name: string, processor: Processor<Data>, options: { concurrency: number }): void {
    const worker = new Worker<Data>(name, processor, {
      connection: this.connections.forJobs(name),
      prefix: queuePrefix(this.options.redisPrefix, name),
      concurrency: options.concurrency,
    });
    worker.on("error", (error) => this.options.logger.warn({ err: error }, `${name} worker error`));
    this.workers.set(name, worker as Worker);
  }

  /** Stops taking jobs of `name` on this server; resolves once its running jobs are done. */
  async stop(name: string): Promise<void> {
    await this.workers.get(name)?.close();
  }

  /** Stops every worker (waiting for running jobs), then closes the queues. */
  async close(): Promise<void> {
    await Promise.all([...this.workers.values()].map((worker) => worker.close()));
    await Promise.all(this.queues.map((queue) => queue.close()));
  }
}
