// What a spectator's screen shows of a table, folded from its Watch stream: the snapshot first,
// then each public event. This is presentation state, not the rules: who may play what is the
// server's to say (prompts, refusals); here we only keep what has been said.

import type { Card, Seat } from "./gen/spades/v1/cards_pb.js";
import type { Bid } from "./gen/spades/v1/actions_pb.js";
import type { Event, HandScored, MatchEnded, Player } from "./gen/spades/v1/events_pb.js";
import type { RuleSet } from "./gen/spades/v1/rules_pb.js";
import type { MatchView } from "./gen/spades/v1/view_pb.js";
import type { Turn } from "./gen/spades/v1/play_pb.js";
import { cardKey, seatIndex } from "./cards.js";
import { type Timestamp, timestampMs } from "@bufbuild/protobuf/wkt";

/** A prompt's deadline (when the turn's time runs out) in ms since the epoch, as Date.now(). */
export function deadlineMillis(deadline: Timestamp): number {
  return timestampMs(deadline);
}

export interface PlayedCard {
  seat: Seat;
  card: Card;
}

export interface TableState {
  sequence: bigint;
  /** The seat this view is for; undefined for a spectator. */
  viewer: Seat | undefined;
  /** The viewer's own cards (a spectator has none). */
  hand: Card[];
  rules: RuleSet | undefined;
  players: Map<Seat, Player>;
  handNumber: number;
  dealer: Seat | undefined;
  /** Cards each seat holds, in seat order. */
  handSizes: number[];
  bids: Map<Seat, Bid>;
  currentTrick: PlayedCard[];
  /** The last finished trick of this hand, shown until the next card. */
  lastTrick: PlayedCard[];
  /** The play that won ``lastTrick`` (TrickWon's winner and winning card): the server's word,
   * so no client works out a trick's winner itself. */
  trickWinner: PlayedCard | undefined;
  tricksWon: number[];
  scores: number[];
  handResults: HandScored[];
  substituted: Set<Seat>;
  end: MatchEnded | undefined;
  seedRevealed: boolean;
  /** Whose turn it is and when its time runs out, as the server last said (Snapshot.turn,
   * Batch.turn); undefined when no one is to act. */
  turn: Turn | undefined;
}

/** The state a snapshot describes (``turn``: the snapshot's, when it has one). */
export function fromSnapshot(sequence: bigint, view: MatchView, turn?: Turn): TableState {
  return {
    turn,
    sequence,
    viewer: view.viewer || undefined,
    hand: view.hand.map((card) => card),
    rules: view.rules,
    players: new Map(view.players.map((player) => [player.seat, player])),
    handNumber: view.handNumber,
    dealer: view.dealer || undefined,
    handSizes: [...view.handSizes],
    bids: new Map(
      view.bids.filter((bid) => bid.bid !== undefined).map((bid) => [bid.seat, bid.bid as Bid]),
    ),
    currentTrick: view.currentTrick.map((play) => ({ seat: play.seat, card: play.card as Card })),
    lastTrick: [],
    trickWinner: undefined,
    tricksWon: [...view.tricksWon],
    scores: [...view.scores],
    handResults: [...view.handResults],
    substituted: new Set(view.substituted),
    end: view.end,
    seedRevealed: view.seed.length > 0,
  };
}

/** The state after one more event (``state`` is updated in place and returned). */
export function fold(state: TableState, event: Event): TableState {
  state.sequence = event.sequence;
  const what = event.kind;
  switch (what.case) {
    case "tableCreated":
      state.rules = what.value.rules;
      break;
    case "seatTaken":
      if (what.value.player) state.players.set(what.value.player.seat, what.value.player);
      break;
    case "seatLeft":
      state.players.delete(what.value.seat);
      break;
    case "handStarted":
      state.handNumber = what.value.handNumber;
      state.dealer = what.value.dealer;
      state.bids.clear();
      state.currentTrick = [];
      state.lastTrick = [];
      state.trickWinner = undefined;
      state.tricksWon = state.tricksWon.map(() => 0);
      break;
    case "cardsDealt":
      state.handSizes[seatIndex(what.value.seat)] = what.value.cardCount;
      if (what.value.seat === state.viewer) state.hand = [...what.value.cards];
      break;
    case "cardsShown":
      if (what.value.seat === state.viewer) state.hand = [...what.value.cards];
      break;
    case "cardsPassed":
      if (what.value.fromSeat === state.viewer) state.hand = without(state.hand, what.value.cards);
      if (what.value.toSeat === state.viewer) state.hand = [...state.hand, ...what.value.cards];
      break;
    case "bidMade":
      if (what.value.bid) state.bids.set(what.value.seat, what.value.bid);
      break;
    case "cardPlayed": {
      const index = seatIndex(what.value.seat);
      state.handSizes[index] = Math.max(0, (state.handSizes[index] ?? 0) - 1);
      state.currentTrick.push({ seat: what.value.seat, card: what.value.card as Card });
      if (what.value.seat === state.viewer) state.hand = without(state.hand, [what.value.card as Card]);
      state.lastTrick = [];
      state.trickWinner = undefined;
      break;
    }
    case "trickWon": {
      const index = seatIndex(what.value.winner);
      state.tricksWon[index] = (state.tricksWon[index] ?? 0) + 1;
      state.lastTrick = state.currentTrick;
      state.trickWinner = what.value.winningCard
        ? { seat: what.value.winner, card: what.value.winningCard }
        : undefined;
      state.currentTrick = [];
      break;
    }
    case "handScored":
      state.handResults.push(what.value);
      state.scores = what.value.sides.map((side) => side.totalScore);
      break;
    case "seatSubstituted":
      state.substituted.add(what.value.seat);
      break;
    case "seatReclaimed":
      state.substituted.delete(what.value.seat);
      break;
    case "matchEnded":
      state.end = what.value;
      state.turn = undefined;
      break;
    case "seedRevealed":
      state.seedRevealed = true;
      break;
    default:
      break; // no change to what a spectator sees (passes, timeouts, claims, ...)
  }
  return state;
}

/** The turn a batch ends with (Batch.turn: none when no one is to act), in ``state``. */
export function applyTurn(state: TableState, turn: Turn | undefined): TableState {
  state.turn = turn;
  return state;
}

function without(hand: Card[], gone: Card[]): Card[] {
  const keys = new Set(gone.map(cardKey));
  return hand.filter((card) => !keys.has(cardKey(card)));
}
