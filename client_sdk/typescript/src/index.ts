// The Spades table service from TypeScript: connect-es clients for every service over gRPC-Web
// (the server's own web port), plus what a client needs around them: a Watch that resumes from
// the last sequence it saw after a dropped connection, and action ids for seats; accounts,
// ratings and leaderboards (ratings.ts); a finished table's analysis (AnalysisService).

import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { create } from "@bufbuild/protobuf";
import { LobbyService } from "./gen/spades/v1/lobby_pb.js";
import {
  type ActionResult,
  PlayService,
  type SeatResponse,
  type Snapshot,
  type WatchResponse,
} from "./gen/spades/v1/play_pb.js";
import type { Action } from "./gen/spades/v1/actions_pb.js";
import { AdminService } from "./gen/spades/v1/admin_pb.js";
import { AccountService } from "./gen/spades/v1/account_pb.js";
import { RatingService } from "./gen/spades/v1/rating_pb.js";
import { TournamentService } from "./gen/spades/v1/tournament_pb.js";
import { AnalysisService } from "./gen/spades/v1/analysis_pb.js";
import { ChallengeService } from "./gen/spades/v1/challenge_pb.js";
import { PresenceService } from "./gen/spades/v1/presence_pb.js";
import { type RuleSet, RuleSetSchema, PlayDirection } from "./gen/spades/v1/rules_pb.js";

export * from "./cards.js";
export * from "./deals.js";
export * from "./errors.js";
export * from "./games.js";
export * from "./ratings.js";
export * from "./table.js";
export * from "./tournaments.js";
export * from "./gen/spades/v1/account_pb.js";
export * from "./gen/spades/v1/actions_pb.js";
export * from "./gen/spades/v1/analysis_pb.js";
export * from "./gen/spades/v1/cards_pb.js";
export * from "./gen/spades/v1/challenge_pb.js";
export * from "./gen/spades/v1/events_pb.js";
export * from "./gen/spades/v1/games_pb.js";
export * from "./gen/spades/v1/lobby_pb.js";
export * from "./gen/spades/v1/play_pb.js";
export * from "./gen/spades/v1/presence_pb.js";
export * from "./gen/spades/v1/rating_pb.js";
export * from "./gen/spades/v1/record_pb.js";
export * from "./gen/spades/v1/rules_pb.js";
export * from "./gen/spades/v1/tournament_pb.js";
export * from "./gen/spades/v1/view_pb.js";
export { create, fromBinary, fromJsonString } from "@bufbuild/protobuf";
export { Code, ConnectError } from "@connectrpc/connect";

export interface SpadesClients {
  lobby: Client<typeof LobbyService>;
  play: Client<typeof PlayService>;
  admin: Client<typeof AdminService>;
  account: Client<typeof AccountService>;
  rating: Client<typeof RatingService>;
  tournament: Client<typeof TournamentService>;
  analysis: Client<typeof AnalysisService>;
  challenge: Client<typeof ChallengeService>;
  presence: Client<typeof PresenceService>;
}

/** Clients for a server's web port (``http://127.0.0.1:8080`` or the page's own origin). */
export function connectTo(baseUrl: string): SpadesClients {
  const transport = createGrpcWebTransport({ baseUrl, useBinaryFormat: true });
  return {
    lobby: createClient(LobbyService, transport),
    play: createClient(PlayService, transport),
    admin: createClient(AdminService, transport),
    account: createClient(AccountService, transport),
    rating: createClient(RatingService, transport),
    tournament: createClient(TournamentService, transport),
    analysis: createClient(AnalysisService, transport),
    challenge: createClient(ChallengeService, transport),
    presence: createClient(PresenceService, transport),
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

/**
 * A new request id for CreateTable, JoinTable, QuickMatch or AddHouseBot: send it with the call,
 * and the same id when the call is sent again (see {@link retried}). A retry then gets the first
 * call's outcome (the same table, the same seat and a working token). Keep it secret like a
 * seat token: whoever sends it again gets that seat token.
 */
export function newRequestId(): string {
  return newActionId();
}

/** Seconds between the tries of {@link retried}. */
export const RETRY_DELAYS = [0.25, 0.5, 1, 2, 4];

/**
 * ``call()`` (a request that carries its request id), made again after each of
 * {@link RETRY_DELAYS} while the server cannot be reached or does not answer in time.
 */
export async function retried<T>(call: () => Promise<T>): Promise<T> {
  for (const delay of [...RETRY_DELAYS, undefined]) {
    try {
      return await call();
    } catch (error) {
      const code = error instanceof ConnectError ? error.code : undefined;
      if (delay === undefined || (code !== Code.Unavailable && code !== Code.DeadlineExceeded)) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay * 1000));
    }
  }
  throw new Error("unreachable");
}

export interface WatchOptions {
  /** Stop watching. */
  signal?: AbortSignal;
  /** Called when the connection dropped and a resume is about to be tried. */
  onReconnect?: (attempt: number, error: unknown) => void;
}

/** A message of a Watch or Seat stream: its snapshot, an event, or (Seat) a prompt. */
type StreamMessage = WatchResponse | SeatResponse;

/** Where a Watch or Seat stream starts (StartPlay in play.proto): ``latest`` for the current
 * view, else after ``afterSequence`` (0: from the table's first event). ``batched`` asks for
 * batches (play.proto's Batch: what one change of the table brings, in one message). */
export interface StreamStart {
  afterSequence: bigint;
  latest: boolean;
  batched: boolean;
}

/** A batch's contents as the messages an unbatched stream sends: its events in sequence, then
 * (Seat) its prompt; then the batch itself with neither, for its ``turn`` (whose turn it is
 * now and until when, Batch.turn: unset when no one is to act). Any other message as it is. */
function unbatched<M extends StreamMessage>(message: M): M[] {
  const what = message.kind;
  if (what.case !== "batch") return [message];
  const parts: M[] = what.value.events.map((event) => ({ ...message, kind: { case: "event", value: event } }) as M);
  const prompt = what.value.prompt;
  if (prompt !== undefined) parts.push({ ...message, kind: { case: "prompt", value: prompt } } as M);
  const turnOnly = { ...what.value, events: [], actionResults: [], prompt: undefined };
  parts.push({ ...message, kind: { case: "batch", value: turnOnly } } as M);
  return parts;
}

/**
 * Every message of a stream opened by ``open(start)``: first at the table's latest sequence
 * (the current view), then, whenever the connection drops, resumed after the last sequence seen
 * (with a growing pause). The stream is opened batched (one message per change of the table, the
 * cheaper for the server); each batch is passed on as the events and prompt it holds, so a
 * caller sees the messages of an unbatched stream, and then as the batch alone for its turn
 * (see {@link applyTurn}). It ends when the server ends the stream with
 * OK (it does so once the match is over, after SeedRevealed: no reconnect follows), or ``signal``
 * aborts. A resumed stream's snapshot repeats what was seen, so only the first is passed on.
 * Refusals (NOT_FOUND, ABORTED when a newer stream for the seat took over, ...) are thrown.
 */
async function* resuming<M extends StreamMessage>(
  open: (start: StreamStart) => AsyncIterable<M>,
  options: WatchOptions,
): AsyncGenerator<M> {
  let after: bigint | undefined;
  let attempt = 0;
  for (;;) {
    try {
      const start =
        after === undefined
          ? { afterSequence: 0n, latest: true, batched: true }
          : { afterSequence: after, latest: false, batched: true };
      for await (const received of open(start)) {
        attempt = 0;
        for (const message of unbatched(received)) {
          const what = message.kind;
          if (what.case === "snapshot") {
            if (after === undefined) yield message;
            after = what.value.sequence;
            continue;
          }
          if (what.case === "event") after = what.value.sequence;
          yield message;
        }
      }
      return; // ended with OK: the match is over

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

/** Every message of a table's Watch stream (a spectator's), resuming as {@link resuming} says. */
export function watchTable(
  clients: SpadesClients,
  tableId: string,
  options: WatchOptions = {},
): AsyncGenerator<WatchResponse> {
  return resuming((start) => clients.play.watch({ tableId, ...start }, { signal: options.signal }), options);
}

/** The metadata header a seat's calls carry its token in. */
export const SEAT_TOKEN_HEADER = "spades-seat-token";

/** A seat held by an account (a challenge's table): the account's session token or key, the
 * table, and which of its seats there ("north" .. "west"). */
export interface AccountSeat {
  accountToken: string;
  tableId: string;
  seat: string;
}

/** What a seat's calls are made with: its seat token, or the account that holds it. */
export type SeatCredential = string | AccountSeat;

/** The metadata a seat's calls carry: ``spades-seat-token``, or the account's Bearer token with
 * ``spades-table-id`` and ``spades-seat`` (docs/accounts.md). */
export function seatHeaders(credential: SeatCredential): Record<string, string> {
  if (typeof credential === "string") return { [SEAT_TOKEN_HEADER]: credential };
  return {
    authorization: `Bearer ${credential.accountToken}`,
    "spades-table-id": credential.tableId,
    "spades-seat": credential.seat,
  };
}

/**
 * Every message of a seat's stream (PlayService.Seat: the seat's view, its redacted events and
 * its prompts), resuming as {@link resuming} says. The seat acts with {@link act}.
 */
export function playSeat(
  clients: SpadesClients,
  token: SeatCredential,
  options: WatchOptions = {},
): AsyncGenerator<SeatResponse> {
  const headers = seatHeaders(token);
  return resuming((start) => clients.play.seat(start, { signal: options.signal, headers }), options);
}

/**
 * One action of the seat (PlayService.Act), answering the prompt at ``sequence``; its result.
 * A dropped connection is retried with the same action id, so the action applies at most once.
 */
export async function act(
  clients: SpadesClients,
  token: SeatCredential,
  action: Action,
  sequence: bigint,
  actionId: string = newActionId(),
): Promise<ActionResult> {
  const headers = seatHeaders(token);
  for (let attempt = 0; ; attempt++) {
    try {
      const response = await clients.play.act({ action: { actionId, sequence, action } }, { headers });
      if (response.result) return response.result;
      throw new ConnectError("the server sent no result", Code.Internal);
    } catch (error) {
      const code = error instanceof ConnectError ? error.code : Code.Unavailable;
      if (code !== Code.Unavailable || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
    }
  }
}

/**
 * A table's view now (PlayService.GetView): the seat's with its ``token`` (its own cards and
 * legal actions), the public view without one; ``sequence`` is the one to act on or resume from.
 */
export async function getView(
  clients: SpadesClients,
  tableId: string,
  token?: SeatCredential,
): Promise<Snapshot> {
  const headers: Record<string, string> = token === undefined ? {} : seatHeaders(token);
  const response = await clients.play.getView({ tableId }, { headers });
  if (response.snapshot) return response.snapshot;
  throw new ConnectError("the server sent no view", Code.Internal);
}
