// The Spades table service from TypeScript: connect-es clients for every service over gRPC-Web
// (the server's own web port), plus what a client needs around them: a Watch that resumes from
// the last sequence it saw after a dropped connection, and action ids for seats.

import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { create } from "@bufbuild/protobuf";
import { LobbyService } from "./gen/spades/v1/lobby_pb.js";
import { PlayService, type WatchResponse } from "./gen/spades/v1/play_pb.js";
import { AdminService } from "./gen/spades/v1/admin_pb.js";
import { type RuleSet, RuleSetSchema, PlayDirection } from "./gen/spades/v1/rules_pb.js";

export * from "./cards.js";
export * from "./table.js";
export * from "./gen/spades/v1/actions_pb.js";
export * from "./gen/spades/v1/cards_pb.js";
export * from "./gen/spades/v1/events_pb.js";
export * from "./gen/spades/v1/lobby_pb.js";
export * from "./gen/spades/v1/play_pb.js";
export * from "./gen/spades/v1/record_pb.js";
export * from "./gen/spades/v1/rules_pb.js";
export * from "./gen/spades/v1/view_pb.js";
export { create } from "@bufbuild/protobuf";
export { Code, ConnectError } from "@connectrpc/connect";

export interface SpadesClients {
  lobby: Client<typeof LobbyService>;
  play: Client<typeof PlayService>;
  admin: Client<typeof AdminService>;
}

/** Clients for a server's web port (``http://127.0.0.1:8080`` or the page's own origin). */
export function connectTo(baseUrl: string): SpadesClients {
  const transport = createGrpcWebTransport({ baseUrl, useBinaryFormat: true });
  return {
    lobby: createClient(LobbyService, transport),
    play: createClient(PlayService, transport),
    admin: createClient(AdminService, transport),
  };
}

/** The default rules (as the server's Rules() has them), with ``overrides``. */
export function defaultRules(overrides: Partial<Omit<RuleSet, "$typeName">> = {}): RuleSet {
  const rules = create(RuleSetSchema, {
    players: 4,
    targetScore: 500,
    blindNilDeficit: 100,
    bagLimit: 10,
    bagPenalty: 100,
    direction: PlayDirection.CLOCKWISE,
    clock: { turnMillis: 30000, extensionMillis: 30000 },
  });
  return Object.assign(rules, overrides);
}

/** A new action id: unique per seat, so a resent action is recognised as the same one. */
export function newActionId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

export interface WatchOptions {
  /** Stop watching. */
  signal?: AbortSignal;
  /** Called when the connection dropped and a resume is about to be tried. */
  onReconnect?: (attempt: number, error: unknown) => void;
}

/**
 * Every message of a table's Watch stream, resuming after the last sequence seen whenever the
 * connection drops (with a growing pause), until the match's seed is revealed (its last event),
 * the stream ends, or ``signal`` aborts. Refusals (NOT_FOUND, ...) are thrown.
 */
export async function* watchTable(
  clients: SpadesClients,
  tableId: string,
  options: WatchOptions = {},
): AsyncGenerator<WatchResponse> {
  let after = 0n;
  let attempt = 0;
  for (;;) {
    try {
      const stream = clients.play.watch(
        { tableId, afterSequence: after },
        { signal: options.signal },
      );
      for await (const message of stream) {
        attempt = 0;
        if (message.kind.case === "snapshot") {
          // A resumed stream's snapshot repeats what we have; the first one is news.
          if (after === 0n) yield message;
          after = message.kind.value.sequence;
          continue;
        }
        if (message.kind.case === "event") {
          after = message.kind.value.sequence;
          yield message;
          if (message.kind.value.kind.case === "seedRevealed") return;
        }
      }
      return;
    } catch (error) {
      if (options.signal?.aborted) return;
      const code = error instanceof ConnectError ? error.code : Code.Unavailable;
      if (code !== Code.Unavailable && code !== Code.Unknown && code !== Code.Internal) throw error;
      attempt += 1;
      options.onReconnect?.(attempt, error);
      await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 250 * 2 ** attempt)));
    }
  }
}
