// Cards, seats and bids as people read them ("Q♠", "Queen of spades", "North", "Nil"). The wire's encodings are
// documented in the protos: Seat is 1-based (SEAT_NORTH = 1), arrays "in seat order" are
// 0-based from North; a joker has no suit and the rank RANK_LITTLE_JOKER or RANK_BIG_JOKER.

import { type Card, Rank, Seat, Suit } from "./gen/spades/v1/cards_pb.js";
import { type Bid, Bid_Kind } from "./gen/spades/v1/actions_pb.js";

const SUIT_SYMBOLS: Record<number, string> = {
  [Suit.CLUBS]: "♣",
  [Suit.DIAMONDS]: "♦",
  [Suit.HEARTS]: "♥",
  [Suit.SPADES]: "♠",
};

const RANK_LABELS: Record<number, string> = {
  [Rank.TEN]: "10",
  [Rank.JACK]: "J",
  [Rank.QUEEN]: "Q",
  [Rank.KING]: "K",
  [Rank.ACE]: "A",
};

/** "Q♠", "10♥", "little joker". */
export function cardLabel(card: Card): string {
  if (card.rank === Rank.LITTLE_JOKER) return "little joker";
  if (card.rank === Rank.BIG_JOKER) return "big joker";
  return rankLabel(card.rank) + (SUIT_SYMBOLS[card.suit] ?? "?");
}

/** A rank as a card's corner shows it: "Q", "10", "7". */
export function rankLabel(rank: Rank): string {
  return RANK_LABELS[rank] ?? String(rank);
}

const SUIT_NAMES: Record<number, string> = {
  [Suit.CLUBS]: "clubs",
  [Suit.DIAMONDS]: "diamonds",
  [Suit.HEARTS]: "hearts",
  [Suit.SPADES]: "spades",
};

const RANK_NAMES: Record<number, string> = {
  [Rank.TWO]: "Two",
  [Rank.THREE]: "Three",
  [Rank.FOUR]: "Four",
  [Rank.FIVE]: "Five",
  [Rank.SIX]: "Six",
  [Rank.SEVEN]: "Seven",
  [Rank.EIGHT]: "Eight",
  [Rank.NINE]: "Nine",
  [Rank.TEN]: "Ten",
  [Rank.JACK]: "Jack",
  [Rank.QUEEN]: "Queen",
  [Rank.KING]: "King",
  [Rank.ACE]: "Ace",
};

/** "Queen of hearts", "Ten of spades", "Big joker": what a screen reader says for a card. */
export function cardName(card: Card): string {
  if (card.rank === Rank.LITTLE_JOKER) return "Little joker";
  if (card.rank === Rank.BIG_JOKER) return "Big joker";
  return `${RANK_NAMES[card.rank] ?? "?"} of ${SUIT_NAMES[card.suit] ?? "?"}`;
}

/** A stable key for a card ("12-4" for Q♠), for comparing cards and as a DOM attribute. */
export function cardKey(card: Card): string {
  return `${card.rank}-${card.suit}`;
}

/** True for the two red suits (for colouring). */
export function isRed(card: Card): boolean {
  return card.suit === Suit.HEARTS || card.suit === Suit.DIAMONDS;
}

const SEAT_NAMES: Record<number, string> = {
  [Seat.NORTH]: "North",
  [Seat.EAST]: "East",
  [Seat.SOUTH]: "South",
  [Seat.WEST]: "West",
};

/** "North" for Seat.NORTH. */
export function seatName(seat: Seat): string {
  return SEAT_NAMES[seat] ?? "?";
}

/** The 0-based index of a seat in arrays "in seat order" (North = 0). */
export function seatIndex(seat: Seat): number {
  return seat - Seat.NORTH;
}

/** The Seat enum value of index ``index`` in seat order. */
export function seatAt(index: number): Seat {
  return (Seat.NORTH + index) as Seat;
}

/** "4", "Nil", "Blind Nil", or "" for no bid. */
export function bidLabel(bid: Bid | undefined): string {
  if (bid === undefined) return "";
  switch (bid.kind) {
    case Bid_Kind.TRICKS:
      return String(bid.tricks);
    case Bid_Kind.NIL:
      return "Nil";
    case Bid_Kind.BLIND_NIL:
      return "Blind Nil";
    default:
      return "";
  }
}
