// spades-shuffle-v1 (docs/deals.md), so that a browser can check a finished match's deals
// itself: the seed against its commitment, then every shuffled hand against what was dealt; and
// every action's commitment to its sealed note against the note revealed (docs/records.md).
// tests/web checks it in a browser on real matches (and a tampered record), against the engine.

import { type Card, Rank, Seat, Suit } from "./gen/spades/v1/cards_pb.js";
import type { GameRecord } from "./gen/spades/v1/record_pb.js";
import { seatIndex } from "./cards.js";

const LABEL = new TextEncoder().encode("spades-shuffle-v1");
const SUITS = [Suit.CLUBS, Suit.DIAMONDS, Suit.HEARTS, Suit.SPADES];

async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", data as BufferSource));
}

/** The words of hand ``hand``'s stream, 8 from each block, drawn in order. */
class Stream {
  private words: number[] = [];
  private block = 0;

  constructor(
    private readonly seed: Uint8Array,
    private readonly hand: number,
  ) {}

  async next(): Promise<number> {
    if (this.words.length === 0) {
      const input = new Uint8Array(LABEL.length + this.seed.length + 8);
      input.set(LABEL, 0);
      input.set(this.seed, LABEL.length);
      const view = new DataView(input.buffer);
      view.setUint32(LABEL.length + this.seed.length, this.hand);
      view.setUint32(LABEL.length + this.seed.length + 4, this.block);
      this.block += 1;
      const digest = new DataView((await sha256(input)).buffer);
      for (let k = 0; k < 32; k += 4) this.words.push(digest.getUint32(k));
    }
    return this.words.shift() as number;
  }

  async uniform(n: number): Promise<number> {
    const limit = 2 ** 32 - (2 ** 32 % n);
    for (;;) {
      const x = await this.next();
      if (x < limit) return x % n;
    }
  }
}

function deck(players: number, jokers: boolean): number[] {
  const all = Array.from({ length: jokers ? 54 : 52 }, (_, card) => card);
  return jokers && players === 4 ? all.filter((card) => card !== 0 && card !== 26) : all;
}

/** Each seat's card numbers for hand ``hand`` (North first), as spades-shuffle-v1 deals them. */
export async function dealOf(seed: Uint8Array, hand: number, players: number, jokers: boolean): Promise<number[][]> {
  const cards = deck(players, jokers);
  const stream = new Stream(seed, hand);
  for (let i = cards.length - 1; i > 0; i--) {
    const j = await stream.uniform(i + 1);
    [cards[i], cards[j]] = [cards[j] as number, cards[i] as number];
  }
  const size = players === 4 ? 13 : jokers ? 18 : 17;
  return Array.from({ length: players }, (_, seat) => cards.slice(seat * size, (seat + 1) * size));
}

/** The first dealer's seat number (0 North). */
export async function firstDealer(seed: Uint8Array, players: number): Promise<number> {
  return new Stream(seed, 0).uniform(players);
}

/** A card's number in the shuffle's deck (2♣ 0 … A♠ 51, jokers 52 and 53). */
export function cardNumber(card: Card): number {
  if (card.rank === Rank.LITTLE_JOKER) return 52;
  if (card.rank === Rank.BIG_JOKER) return 53;
  return SUITS.indexOf(card.suit) * 13 + (card.rank - 2);
}

export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

export interface Verification {
  ok: boolean;
  /** What was checked, or what is wrong, for a person. */
  lines: string[];
}

/** Check a finished match's record: the seed's commitment, then every hand dealt from it
 * (hands given as preset deals are not from the seed and are named as such). */
export async function verifyRecord(record: GameRecord): Promise<Verification> {
  if (record.seed.length === 0) {
    return { ok: false, lines: ["The seed is not revealed yet (the match is not over): nothing to verify."] };
  }
  const lines: string[] = [];
  const commitment = hex(await sha256(record.seed));
  if (commitment !== hex(record.seedCommitment)) {
    return { ok: false, lines: [`The seed's SHA-256 ${commitment} is not the commitment ${hex(record.seedCommitment)}.`] };
  }
  lines.push(`The seed matches the commitment ${commitment.slice(0, 16)}….`);
  const players = record.rules?.players || 4;
  const jokers = record.rules?.jokers ?? false;
  const dealt = new Map<number, Map<Seat, number[]>>();
  let hand = 0;
  for (const event of record.events) {
    if (event.kind.case === "handStarted") hand = event.kind.value.handNumber;
    if (event.kind.case === "cardsDealt") {
      const byHand = dealt.get(hand) ?? new Map<Seat, number[]>();
      byHand.set(event.kind.value.seat, event.kind.value.cards.map(cardNumber));
      dealt.set(hand, byHand);
    }
  }
  let ok = true;
  const preset = record.presetDeals.length;
  for (const [number, seats] of [...dealt.entries()].sort((a, b) => a[0] - b[0])) {
    if (number <= preset) {
      lines.push(`Hand ${number}: a preset deal (given by the operator, not from the seed).`);
      continue;
    }
    const expected = await dealOf(record.seed, number, players, jokers);
    const same = [...seats.entries()].every(([seat, cards]) => {
      const want = expected[seatIndex(seat)] ?? [];
      return cards.length === want.length && [...cards].sort((a, b) => a - b).join() === [...want].sort((a, b) => a - b).join();
    });
    if (!same) {
      ok = false;
      lines.push(`Hand ${number}: the cards dealt are NOT the seed's deal.`);
    }
  }
  const count = dealt.size - Math.min(preset, dealt.size);
  if (ok) lines.push(`Every one of the ${count} shuffled hands is the deal of the revealed seed.`);
  const notes = await verifyNotes(record);
  return { ok: ok && notes.ok, lines: [...lines, ...notes.lines] };
}

/** The salt of the sealed note on the event with ``sequence`` (spades.notes.note_salt). */
async function noteSalt(key: CryptoKey, sequence: bigint): Promise<Uint8Array> {
  const message = new Uint8Array(8);
  new DataView(message.buffer).setBigUint64(0, sequence);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, message as BufferSource));
}

/** Every action's commitment (Event.noteSha256) against the note the record reveals for it, or
 * the empty note (spades.notes.note_digest; spades.records.verify_notes in Python). */
export async function verifyNotes(record: GameRecord): Promise<Verification> {
  const revealed = new Map(record.notes.map((note) => [note.sequence, note.text]));
  const committed = record.events.filter((event) => event.noteSha256.length > 0);
  const stray = [...revealed.keys()].filter((sequence) => !committed.some((event) => event.sequence === sequence));
  if (stray.length) return { ok: false, lines: [`A sealed note on event ${stray[0]}, which committed to none.`] };
  if (!committed.length) return { ok: true, lines: [] };
  if (record.noteKey.length === 0) {
    return { ok: false, lines: ["The events commit to sealed notes, but the record has no key to check them by."] };
  }
  const key = await crypto.subtle.importKey("raw", record.noteKey as BufferSource, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const encoder = new TextEncoder();
  for (const event of committed) {
    const salt = await noteSalt(key, event.sequence);
    const note = encoder.encode(revealed.get(event.sequence) ?? "");
    const input = new Uint8Array(salt.length + note.length);
    input.set(salt, 0);
    input.set(note, salt.length);
    if (hex(await sha256(input)) !== hex(event.noteSha256)) {
      const said = revealed.has(event.sequence) ? "its revealed note" : "the empty note (none revealed)";
      return { ok: false, lines: [`Event ${event.sequence}: the commitment to its sealed note does NOT match ${said}.`] };
    }
  }
  return { ok: true, lines: [`Every action's commitment matches its sealed note (${revealed.size} revealed).`] };
}
