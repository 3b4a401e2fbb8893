/* The double-dummy search of spades.solver, in C: partition search over the cards left in every
   hand (docs/solver.md, "How it searches").

   Python (spades/solver/search.py) hands over a position already translated and checked, and
   the value of every way the remaining tricks can fall (the leaf table, built from the engine's
   own scoring): this file knows how cards follow and win a trick, and nothing about points.

   Cards: each hand is a uint64 with 16 bits per suit (clubs, diamonds, hearts, spades), a
   card's bit being its strength in its suit; the spade field holds every trump (with jokers:
   3..A of spades, then the 2 of spades, Little Joker, Big Joker), so "jokers are spades" and
   "a spade beats any other suit" need no special case here.

   Values: the leaf table is indexed by the tricks each seat wins from the root on
   (sum of wins[seat] * stride[seat]); `low` and `high` bound the value of any completion of a
   partial count. The side of the actor maximises, the other seats minimise (cutthroat: the
   paranoid coalition). Two partial counts whose completions are worth the same up to a
   constant form one "wins class" (for tricks: every count with the same total), so a bound
   learnt under one serves the others.

   Partition search: every search result comes with the set of cards whose owners it relied on
   (`rel`, per suit every card from some rank up: the "relevant" top cards). The result holds
   for every position that differs only in which hands hold the other ("small") cards of each
   suit, as long as each hand keeps as many of them in each suit: the transposition table
   stores it for that whole set of positions, keyed by the shape (how many cards of each suit
   each hand holds), and an entry matches when the owners of its relevant top cards match. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __BMI2__
#include <immintrin.h>
#endif

#define SUIT_BITS 16
#define SPADES 3
#define MAX_MOVES 20
#define INFINITE_VALUE 1000000000
/* Bounds are stored in 16 bits (a hand's points stay far inside): beyond is "unbounded". */
#define STORED_INFINITY 32000
#define SUIT_FIELD(suit) ((uint64_t)0xFFFF << (SUIT_BITS * (suit)))
#define NO_ENTRY 0xFFFFFFFFu
/* The transposition table's pool holds at most this many entries (80 MB; a context may be made
   with fewer). When it is full its runs are packed to the front, or the table is emptied when
   its entries would still fill most of it (a whole trick-1 search of a full deal needs fewer). */
#define MAX_ENTRIES (15u << 17)
#define MAX_SHAPE_BITS 22
/* The last card of a trick reads its children's bounds and table entries first (see
   alpha_beta) when the hands hold more than this many cards: 1, every trick but the last one
   (which has no choice), so that the tests' endings of two and three tricks go through it;
   no higher setting measured faster. */
#define KNOWN_MIN_CARDS 1

typedef struct {
    uint64_t hands[4];
    uint64_t out; /* the cards still in a hand or on the table */
    int trick_cards[4];
    int trick_seats[4];
    int trick_length;
    int leader;
    int turn;
    int broken;
    int wins_index;
} Node;

/* One stored bound, for every position of its shape whose top cards of each suit are held as
   `owners` says: per suit a 32-bit lane of 2 bits a card still out, highest card in the top
   bits; `mask` keeps the lanes' bits of the relevant top cards (suits 0-1, then 2-3). */
typedef struct {
    uint64_t mask[2];
    uint64_t owners[2];
    int16_t lower; /* relative to the wins class's offset */
    int16_t upper;
    /* The best lead found here: its suit and how many cards still out rank above it in that
       suit (-1: none), so it names the same card in any matching position. */
    int8_t best_suit;
    int8_t best_above;
} Entry;

/* A shape: how many cards of each suit each hand holds (4 bits each), and in `extra` the
   leader, whether spades are broken and the wins class. */
typedef struct {
    uint64_t shape;
    uint32_t extra;
    uint32_t start; /* its run of entries in the pool, oldest first; NO_ENTRY: an empty slot */
    uint32_t count;
    uint32_t capacity; /* the run's length, of which `count` are used */
} Shape;

typedef struct {
    int players;
    int next[4];
    int maximizing[4];
    int must_break;
    int additive;
    int stride[4];
    int tricks_left;
    const int32_t *leaf;
    int32_t *owned_leaf; /* the leaf table's copy, which `leaf` reads */
    int32_t *bounds;     /* one allocation for low, high, offset and wins_class */
    int32_t *low;
    int32_t *high;
    int32_t *offset;
    int32_t *wins_class;
    int32_t *totals; /* the tricks counted in each partial count */
    int size;
    /* Per seat, made when first needed (points only): the least and the greatest value of a
       completion in which that seat wins at least q more tricks, at [2 * q * size + index]
       and [(2 * q + 1) * size + index]. */
    int32_t *at_least[4];
    Shape *shapes;
    uint32_t shape_mask; /* slots - 1 */
    uint32_t shape_count;
    /* The pool of entries: each shape's lie together in one run, which moves to the pool's
       end, twice as long, when it is full (a lookup reads them in one sweep of memory). */
    Entry *entries;
    uint32_t entry_count; /* used from the pool's start, runs and the space they left */
    uint32_t entry_capacity;
    uint32_t entry_limit; /* the pool's largest size: MAX_ENTRIES, or less when asked */
    /* Per seat and card: how often it cut off a search (the history heuristic), which
       breaks ties of the static move ordering. */
    uint32_t history[4 * 64];
    int failed; /* out of memory */
    /* How often the table was packed, had its shallowest shapes dropped, or was emptied
       (read by table_counts, for tests and tuning). */
    uint64_t packs, drops, clears;
} Search;

/* Counters for tuning, compiled in with -DSOLVER_STATS (read by _search.stats()). */
#ifdef SOLVER_STATS
static uint64_t stat_nodes, stat_boundary, stat_walk, stat_hits, stat_runs;
#define STAT(counter) (stat_##counter++)
#else
#define STAT(counter) ((void)0)
#endif

static inline int highest_bit(uint64_t x) { return 63 - __builtin_clzll(x); }
static inline int lowest_bit(uint64_t x) { return __builtin_ctzll(x); }

/* Every card of `card`'s suit from `card` up. */
static inline uint64_t from_card_up(int card) {
    return SUIT_FIELD(card >> 4) & ~(((uint64_t)1 << card) - 1);
}

static inline int beats(int card, int top) {
    int suit = card >> 4, top_suit = top >> 4;
    return (suit == top_suit && card > top) || (suit == SPADES && top_suit != SPADES);
}

static inline int trick_winner(const Node *node, int length) {
    int best = 0;
    for (int i = 1; i < length; i++)
        if (beats(node->trick_cards[i], node->trick_cards[best])) best = i;
    return best;
}

/* Plays `card` for the seat to act. At the end of a trick, returns the cards whose ranks
   decided who won it (the winner, when another card of its suit was played: beaten by rank,
   not by suit), else 0. */
static uint64_t play(const Search *search, Node *node, int card) {
    int seat = node->turn;
    node->hands[seat] &= ~((uint64_t)1 << card);
    if ((card >> 4) == SPADES) node->broken = 1;
    node->trick_cards[node->trick_length] = card;
    node->trick_seats[node->trick_length] = seat;
    node->trick_length++;
    if (node->trick_length < search->players) {
        node->turn = search->next[seat];
        return 0;
    }
    int best = trick_winner(node, node->trick_length);
    int winning = node->trick_cards[best];
    int same_suit = 0;
    for (int i = 0; i < node->trick_length; i++) {
        same_suit += (node->trick_cards[i] >> 4) == (winning >> 4);
        node->out &= ~((uint64_t)1 << node->trick_cards[i]);
    }
    int winner = node->trick_seats[best];
    node->wins_index += search->stride[winner];
    node->trick_length = 0;
    node->leader = node->turn = winner;
    return same_suit > 1 ? from_card_up(winning) : 0;
}

static uint64_t legal_cards(const Search *search, const Node *node) {
    uint64_t hand = node->hands[node->turn];
    if (node->trick_length) {
        uint64_t follow = hand & SUIT_FIELD(node->trick_cards[0] >> 4);
        return follow ? follow : hand;
    }
    if (search->must_break && !node->broken) {
        uint64_t other = hand & ~SUIT_FIELD(SPADES);
        return other ? other : hand;
    }
    return hand;
}

/* The lowest card of the run of equivalent cards `card` belongs to: the cards of `hand` below
   it with no other card still out between them. */
static int run_bottom(uint64_t hand, uint64_t out, int card) {
    uint64_t below = out & SUIT_FIELD(card >> 4) & (((uint64_t)1 << card) - 1);
    uint64_t others = below & ~hand; /* the cards out below it in other hands */
    if (others) below &= ~(((uint64_t)2 << highest_bit(others)) - 1);
    return below ? lowest_bit(below) : card;
}

/* The highest card of the run of `hand`'s cards that `card` is in. */
static int run_top(uint64_t hand, uint64_t out, int card) {
    uint64_t above = out & SUIT_FIELD(card >> 4) & ~(((uint64_t)2 << card) - 1);
    uint64_t others = above & ~hand; /* the cards out above it in other hands */
    if (others) above &= ((uint64_t)1 << lowest_bit(others)) - 1;
    return above ? highest_bit(above) : card;
}

typedef struct {
    int card; /* the run's lowest card: the one played */
    int top;  /* the run's highest card */
    int score;
} Move;

/* How many cards still out rank above `card` in its suit. */
static inline int cards_above(uint64_t out, int card) {
    return __builtin_popcountll(out & SUIT_FIELD(card >> 4) & ~(((uint64_t)2 << card) - 1));
}

/* Whether `card`, played now by the seat to act, would beat whatever the seats of the other
   side still to play to this trick can play (a higher card of the suit led, or a trump). */
static int holds_after(const Search *search, const Node *node, int card, int led) {
    int mine = search->maximizing[node->turn];
    int seat = search->next[node->turn];
    uint64_t above = from_card_up(card); /* the card itself is the mover's */
    for (int k = node->trick_length + 1; k < search->players; k++, seat = search->next[seat]) {
        if (search->maximizing[seat] == mine) continue;
        uint64_t hand = node->hands[seat];
        uint64_t followed = hand & SUIT_FIELD(led);
        if (followed) {
            if ((card >> 4) == led && (followed & above)) return 0;
        } else {
            uint64_t trumps = hand & SUIT_FIELD(SPADES);
            if (trumps && ((card >> 4) != SPADES || (trumps & above))) return 0;
        }
    }
    return 1;
}

/* One move per run of equivalent legal cards (its lowest card), best-looking first. */
static int moves_of(const Search *search, const Node *node, Move *moves, int preferred) {
    uint64_t legal = legal_cards(search, node);
    uint64_t hand = node->hands[node->turn];
    uint64_t out = node->out;
    int count = 0;
    int mine = search->maximizing[node->turn];
    int winning_card = -1, partner_winning = 0, led = -1, partner_beatable = 0;
    if (node->trick_length) {
        int best = trick_winner(node, node->trick_length);
        winning_card = node->trick_cards[best];
        partner_winning = search->maximizing[node->trick_seats[best]] == mine;
        led = node->trick_cards[0] >> 4;
        partner_beatable = partner_winning && !holds_after(search, node, winning_card, led);
    }
    int last = node->trick_length == search->players - 1;
    while (legal) {
        int top = highest_bit(legal);
        int bottom = run_bottom(hand, out, top);
        uint64_t run = (((uint64_t)2 << top) - 1) & ~(((uint64_t)1 << bottom) - 1);
        legal &= ~run;
        int suit = bottom >> 4, rank = bottom & 15;
        int score;
        if (winning_card < 0) {
            /* Leading: a winner of our own first; then low toward a partner's winner; then
               low cards, away from a suit an opponent can ruff. */
            uint64_t field = SUIT_FIELD(suit);
            uint64_t above = out & field & ~(((uint64_t)2 << top) - 1);
            int highest = highest_bit(out & field);
            int holder = 0;
            while (!((node->hands[holder] >> highest) & 1)) holder++;
            if (!above)
                score = 60 + rank;
            else if (search->maximizing[holder] == mine)
                score = 50 - rank;
            else
                score = 20 - rank;
            if (suit != SPADES) {
                for (int seat = 0; seat < search->players; seat++) {
                    if (search->maximizing[seat] == mine) continue;
                    if (!(node->hands[seat] & field) && (node->hands[seat] & SUIT_FIELD(SPADES)))
                        score -= 30;
                }
            } else {
                score -= 5;
            }
        } else {
            int top_suit = winning_card >> 4;
            int wins = beats(bottom, winning_card) || beats(top, winning_card);
            /* Before the trick's last card, a winner that the other side's cards still to
               come cannot beat goes first: over theirs, and over a partner's winner that
               they can beat (else low under the partner's). */
            if (partner_winning)
                score = !wins ? 50 - rank
                        : partner_beatable && holds_after(search, node, bottom, led) ? 70 - rank
                                                                                     : 10 - rank;
            else if (wins)
                score = (last ? 80 : holds_after(search, node, bottom, led) ? 65 : 60) - rank -
                        (suit != top_suit ? 10 : 0);
            else
                score = 40 - rank;
        }
        if (preferred >= bottom && preferred <= top) score += 100000;
        moves[count].card = bottom;
        moves[count].top = top;
        uint32_t seen = search->history[node->turn * 64 + bottom];
        moves[count].score = score * 1024 + (int)(seen > 1023 ? 1023 : seen);
        count++;
    }
    for (int i = 1; i < count; i++) {
        Move move = moves[i];
        int j = i - 1;
        while (j >= 0 && moves[j].score < move.score) {
            moves[j + 1] = moves[j];
            j--;
        }
        moves[j + 1] = move;
    }
    return count;
}

/* The card of `hand` in `suit` with `above` cards still out above it, or -1. */
static int card_with_above(uint64_t hand, uint64_t out, int suit, int above) {
    uint64_t cards = hand & SUIT_FIELD(suit);
    while (cards) {
        int card = highest_bit(cards);
        if (cards_above(out, card) == above) return card;
        cards &= ~((uint64_t)1 << card);
    }
    return -1;
}

/* Tricks the seat on lead can surely take by cashing its top cards, whatever the others do:
   in a side suit, its unbroken run from the top, limited by the length of any opponent who
   could ruff (and, for points, by the side-suit cards of a partner who could be made to ruff);
   in trumps (when it may lead them), its run from the top. `rel` gets the cards
   cashed (and everything above them). */
static int quick_tricks(const Search *search, const Node *node, uint64_t *rel) {
    int leader = node->leader;
    int side = search->maximizing[leader];
    uint64_t hand = node->hands[leader];
    int total = 0, side_suits = 0;
    /* Points count who wins, not only which side: a partner holding trumps and no other card
       must ruff the leader's winner, and it holds no other card once it has followed or
       discarded as many side-suit tricks as it holds side-suit cards. */
    int partner_cap = 64;
    if (!search->additive) {
        for (int seat = 0; seat < search->players; seat++) {
            if (seat == leader || search->maximizing[seat] != side) continue;
            if (!(node->hands[seat] & SUIT_FIELD(SPADES))) continue;
            int others = __builtin_popcountll(node->hands[seat] & ~SUIT_FIELD(SPADES));
            if (others < partner_cap) partner_cap = others;
        }
    }
    for (int suit = 0; suit < 4; suit++) {
        uint64_t field = SUIT_FIELD(suit);
        if (!(hand & field)) continue;
        if (suit == SPADES && search->must_break && !node->broken && (hand & ~field)) continue;
        int limit = 64;
        if (suit != SPADES) {
            for (int seat = 0; seat < search->players; seat++) {
                if (search->maximizing[seat] == side) continue;
                if (!(node->hands[seat] & SUIT_FIELD(SPADES))) continue;
                int length = __builtin_popcountll(node->hands[seat] & field);
                if (length < limit) limit = length;
            }
        }
        int run = 0, lowest = -1;
        uint64_t rest = node->out & field;
        while (rest && run < limit) {
            int top = highest_bit(rest);
            if (!((hand >> top) & 1)) break;
            run++;
            lowest = top;
            rest &= ~((uint64_t)1 << top);
        }
        if (!run) continue;
        if (suit != SPADES) {
            if (side_suits + run > partner_cap) run = partner_cap - side_suits;
            if (run <= 0) continue;
            side_suits += run;
            lowest = -1;
            rest = node->out & field;
            for (int i = 0; i < run; i++) {
                lowest = highest_bit(rest);
                rest &= ~((uint64_t)1 << lowest);
            }
        }
        *rel |= from_card_up(lowest);
        total += run;
    }
    return total;
}

/* The highest trump still out wins whatever trick it is played to, and so does every trump
   below it in the same hand down to the first one held elsewhere: that hand's side takes at
   least that many tricks. Returns the run's length and its seat; `rel` gets the run. */
static int top_trumps(const Search *search, const Node *node, int *owner, uint64_t *rel) {
    uint64_t out = node->out & SUIT_FIELD(SPADES);
    if (!out) return 0;
    int top = highest_bit(out);
    int seat = 0;
    while (!((node->hands[seat] >> top) & 1)) seat++;
    *owner = seat;
    uint64_t trumps = node->hands[seat];
    int run = 0, lowest = top;
    while (out) {
        top = highest_bit(out);
        if (!((trumps >> top) & 1)) break;
        run++;
        lowest = top;
        out &= ~((uint64_t)1 << top);
    }
    *rel |= from_card_up(lowest);
    return run;
}

/* ---- The transposition table ---- */

typedef struct {
    uint64_t shape;
    uint32_t extra;
    uint64_t owners[2]; /* as in Entry, for every card still out */
    uint64_t out;       /* the cards still out */
    uint64_t hash;
#ifndef __BMI2__
    int8_t ranked[4][16]; /* each suit's cards still out, highest first */
#endif
} Key;

static inline uint64_t shape_hash(uint64_t shape, uint32_t extra) {
    uint64_t hash = (shape ^ ((uint64_t)extra << 40) ^ ((uint64_t)extra >> 24)) *
                    0x9E3779B97F4A7C15ULL;
    hash ^= hash >> 29;
    hash *= 0xBF58476D1CE4E5B9ULL;
    return hash ^ (hash >> 32);
}

static void key_of(const Search *search, const Node *node, Key *key) {
    uint64_t shape = 0;
    for (int seat = 0; seat < search->players; seat++)
        for (int suit = 0; suit < 4; suit++)
            shape = shape << 4 |
                    (uint64_t)__builtin_popcountll(node->hands[seat] & SUIT_FIELD(suit));
    key->shape = shape;
    key->extra = (uint32_t)node->leader | (uint32_t)node->broken << 2 |
                 (uint32_t)search->wins_class[node->wins_index] << 3;
    /* Each suit's lane: 2 bits a card still out (its holder: 1 in the low bit for hands 1 and
       3, in the high bit for hands 2 and 3), the highest card in the top bits. With BMI2 the
       holders' bits are gathered at once (pext) and spread into 2-bit fields (pdep). */
    uint64_t lanes[4];
    uint64_t odd = node->hands[1] | node->hands[3], high = node->hands[2] | node->hands[3];
    for (int suit = 0; suit < 4; suit++) {
        uint64_t out = node->out & SUIT_FIELD(suit);
        int count = __builtin_popcountll(out);
        if (!count) {
            lanes[suit] = 0;
            continue;
        }
#ifdef __BMI2__
        uint64_t ones = _pext_u64(odd, out), twos = _pext_u64(high, out);
        uint64_t lowest_first =
            _pdep_u64(ones, 0x5555555555555555ULL) | _pdep_u64(twos, 0xAAAAAAAAAAAAAAAAULL);
        lanes[suit] = (lowest_first << (32 - 2 * count)) & 0xFFFFFFFFULL;
#else
        uint64_t owners = 0;
        for (int rank = 0; out; rank++) {
            int card = highest_bit(out);
            out &= ~((uint64_t)1 << card);
            owners |= ((odd >> card & 1) | (high >> card & 1) << 1) << (30 - 2 * rank);
            key->ranked[suit][rank] = (int8_t)card;
        }
        lanes[suit] = owners;
#endif
    }
    key->out = node->out;
    key->owners[0] = lanes[0] | lanes[1] << 32;
    key->owners[1] = lanes[2] | lanes[3] << 32;
    key->hash = shape_hash(shape, key->extra);
}

static inline int entry_matches(const Entry *entry, const Key *key) {
    return ((key->owners[0] & entry->mask[0]) == entry->owners[0]) &
           ((key->owners[1] & entry->mask[1]) == entry->owners[1]);
}

/* The relevant cards of an entry, in the position of `key`. */
static inline uint64_t entry_rel(const Entry *entry, const Key *key) {
    uint64_t rel = 0;
    for (int suit = 0; suit < 4; suit++) {
        uint32_t lane = (uint32_t)(entry->mask[suit >> 1] >> (32 * (suit & 1)));
        int top = __builtin_popcount(lane) / 2;
        if (!top) continue;
        /* The top-th highest card still out in the suit. */
#ifdef __BMI2__
        uint64_t out = key->out & SUIT_FIELD(suit);
        uint64_t nth = _pdep_u64((uint64_t)1 << (__builtin_popcountll(out) - top), out);
        rel |= from_card_up(lowest_bit(nth));
#else
        rel |= from_card_up(key->ranked[suit][top - 1]);
#endif
    }
    return rel;
}

static void clear_table(Search *search) {
    search->clears++;
    memset(search->shapes, 0xFF, sizeof(Shape) * ((size_t)search->shape_mask + 1));
    search->shape_count = 0;
    search->entry_count = 0;
}

/* The slot of the key's shape: where it is, or the empty slot where it would go. */
static inline Shape *shape_slot(const Search *search, const Key *key) {
    uint32_t slot = (uint32_t)key->hash & search->shape_mask;
    for (;;) {
        Shape *shape = &search->shapes[slot];
        if (shape->start == NO_ENTRY || (shape->shape == key->shape && shape->extra == key->extra))
            return shape;
        slot = (slot + 1) & search->shape_mask;
    }
}

/* The tricks left in a shape's positions (at a trick boundary every hand holds as many). */
static int shape_tricks(const Search *search, uint64_t shape) {
    int cards = 0;
    for (; shape; shape >>= 4) cards += (int)(shape & 15);
    return cards / search->players;
}

/* Keeps at most `max_live` entries and `max_shapes` shapes: the shapes of fewest tricks left
   go first (their searches are the cheapest to repeat), whole tricks at a time. The runs kept
   are packed to the pool's front, each as long as its entries, and their slots made anew.
   1, or 0 when nothing would be kept or memory ran out (the table is then emptied). */
static int keep_deepest(Search *search, uint32_t max_live, uint32_t max_shapes) {
    uint32_t slots = search->shape_mask + 1;
    uint32_t live = 0, kept_shapes = search->shape_count;
    uint32_t live_at[19] = {0}, shapes_at[19] = {0};
    for (uint32_t i = 0; i < slots; i++) {
        const Shape *shape = &search->shapes[i];
        if (shape->start == NO_ENTRY) continue;
        int tricks = shape_tricks(search, shape->shape);
        live += shape->count;
        live_at[tricks] += shape->count;
        shapes_at[tricks]++;
    }
    int fewest = 0; /* the fewest tricks left of a shape kept */
    while ((live > max_live || kept_shapes > max_shapes) && fewest <= search->tricks_left) {
        live -= live_at[fewest];
        kept_shapes -= shapes_at[fewest];
        fewest++;
    }
    /* The runs kept are copied to a new pool; when shapes are dropped, the kept ones are
       gathered and put back into the emptied slots (a dropped slot would cut probe chains). */
    Entry *packed = kept_shapes ? malloc(sizeof(Entry) * (size_t)search->entry_capacity) : NULL;
    Shape *kept = fewest && kept_shapes ? malloc(sizeof(Shape) * (size_t)kept_shapes) : NULL;
    if (packed == NULL || (fewest && kept == NULL)) {
        if (kept_shapes) search->failed = 1;
        free(packed);
        free(kept);
        clear_table(search);
        return 0;
    }
    uint32_t used = 0, gathered = 0;
    for (uint32_t i = 0; i < slots; i++) {
        Shape *shape = &search->shapes[i];
        if (shape->start == NO_ENTRY || shape_tricks(search, shape->shape) < fewest) continue;
        memcpy(packed + used, search->entries + shape->start, sizeof(Entry) * shape->count);
        shape->start = used;
        shape->capacity = shape->count;
        used += shape->count;
        if (fewest) kept[gathered++] = *shape;
    }
    if (fewest) {
        memset(search->shapes, 0xFF, sizeof(Shape) * (size_t)slots);
        for (uint32_t i = 0; i < gathered; i++) {
            uint32_t slot = (uint32_t)shape_hash(kept[i].shape, kept[i].extra) & search->shape_mask;
            while (search->shapes[slot].start != NO_ENTRY) slot = (slot + 1) & search->shape_mask;
            search->shapes[slot] = kept[i];
        }
        free(kept);
    }
    free(search->entries);
    search->entries = packed;
    search->entry_count = used;
    search->shape_count = kept_shapes;
    if (fewest) search->drops++;
    search->packs++;
    return 1;
}

/* Room for `wanted` more entries at the pool's end (the pool grown, or its runs packed,
   dropping the shallowest shapes when the entries would still fill three quarters of it: to
   half): 1, or 0 when the table had to be emptied for it (or memory ran out). */
static int make_room(Search *search, uint32_t wanted) {
    if (search->entry_count + wanted <= search->entry_capacity) return 1;
    uint32_t limit = search->entry_limit;
    if (search->entry_capacity < limit) {
        uint32_t capacity = search->entry_capacity ? search->entry_capacity : 1024;
        while (capacity < search->entry_count + wanted && capacity < limit) capacity *= 2;
        if (capacity > limit) capacity = limit;
        if (search->entry_count + wanted <= capacity) {
            Entry *grown = realloc(search->entries, sizeof(Entry) * capacity);
            if (grown == NULL) {
                search->failed = 1;
                clear_table(search);
                return 0;
            }
            search->entries = grown;
            search->entry_capacity = capacity;
            return 1;
        }
    }
    uint32_t live = 0;
    for (uint32_t i = 0; i <= search->shape_mask; i++)
        if (search->shapes[i].start != NO_ENTRY) live += search->shapes[i].count;
    uint32_t keep = live > search->entry_capacity / 4 * 3 ? search->entry_capacity / 2 : live;
    if (!keep_deepest(search, keep, UINT32_MAX)) return 0; /* emptied */
    if (search->entry_count + wanted <= search->entry_capacity) return 1;
    clear_table(search);
    return 0;
}

/* Doubles the shape slots (up to 2^MAX_SHAPE_BITS; beyond, the shallowest shapes are dropped
   to half of them), or empties the table when memory runs out. */
static int grow_shapes(Search *search) {
    uint32_t slots = search->shape_mask + 1;
    if (slots >= (1u << MAX_SHAPE_BITS)) return keep_deepest(search, UINT32_MAX, slots / 2);
    Shape *grown = malloc(sizeof(Shape) * (size_t)slots * 2);
    if (grown == NULL) {
        search->failed = 1;
        clear_table(search);
        return 0;
    }
    Shape *old = search->shapes;
    search->shapes = grown;
    search->shape_mask = slots * 2 - 1;
    memset(grown, 0xFF, sizeof(Shape) * (size_t)slots * 2);
    for (uint32_t i = 0; i < slots; i++) {
        if (old[i].start == NO_ENTRY) continue;
        uint32_t slot = (uint32_t)shape_hash(old[i].shape, old[i].extra) & search->shape_mask;
        while (grown[slot].start != NO_ENTRY) slot = (slot + 1) & search->shape_mask;
        grown[slot] = old[i];
    }
    free(old);
    return 1;
}

static void store(Search *search, const Key *key, uint64_t rel, int32_t value, int32_t alpha,
                  int32_t beta, int offset, int best_card, uint64_t out) {
    uint64_t mask[2] = {0, 0};
    for (int suit = 0; suit < 4; suit++) {
        int top = __builtin_popcountll(out & SUIT_FIELD(suit) & rel);
        if (top) mask[suit >> 1] |= (uint64_t)(~0u << (32 - 2 * top)) << (32 * (suit & 1));
    }
    uint64_t owners[2] = {key->owners[0] & mask[0], key->owners[1] & mask[1]};
    int32_t relative = value - offset;
    if (relative > STORED_INFINITY) relative = STORED_INFINITY;
    if (relative < -STORED_INFINITY) relative = -STORED_INFINITY;
    /* Always a new entry: an older one for the same cards may be in the run, but a lookup
       takes the tightest bound of every entry that matches, and looking for it walked the
       whole run at every store to find one about one time in twenty. */
    Shape *shape = shape_slot(search, key);
    if (shape->start == NO_ENTRY) {
        if (search->shape_count * 4 >= (search->shape_mask + 1) * 3) {
            if (!grow_shapes(search) && search->shape_count) return;
        }
        shape = shape_slot(search, key);
    }
    if (shape->start == NO_ENTRY || shape->count == shape->capacity) {
        /* A run twice as long (two entries to start with) at the pool's end: the last run
           grows where it lies, any other moves there with its entries. */
        uint32_t length = shape->start == NO_ENTRY ? 2 : shape->capacity * 2;
        if (!make_room(search, length)) return;
        shape = shape_slot(search, key); /* packing the runs keeps the slots */
        if (shape->start == NO_ENTRY) {
            shape->shape = key->shape;
            shape->extra = key->extra;
            shape->count = 0;
            shape->start = search->entry_count;
            search->entry_count += length;
            search->shape_count++;
        } else if (shape->start + shape->capacity == search->entry_count) {
            search->entry_count += length - shape->capacity;
        } else {
            memcpy(search->entries + search->entry_count, search->entries + shape->start,
                   sizeof(Entry) * shape->count);
            shape->start = search->entry_count;
            search->entry_count += length;
        }
        shape->capacity = length;
        STAT(runs);
    }
    Entry *entry = &search->entries[shape->start + shape->count++];
    entry->mask[0] = mask[0];
    entry->mask[1] = mask[1];
    entry->owners[0] = owners[0];
    entry->owners[1] = owners[1];
    /* A value at or below alpha is an upper bound, at or above beta a lower one, else exact. */
    entry->lower = value > alpha ? (int16_t)relative : -STORED_INFINITY;
    entry->upper = value < beta ? (int16_t)relative : STORED_INFINITY;
    if (best_card >= 0) {
        entry->best_suit = (int8_t)(best_card >> 4);
        entry->best_above = (int8_t)cards_above(out, best_card);
    } else {
        entry->best_suit = 0;
        entry->best_above = -1;
    }
}

/* ---- The search ---- */

/* Closes `rel` under the runs searched: a run with a relevant card is relevant whole (it
   stood for its other cards, which the matching positions must hold alike). */
static uint64_t close_runs(uint64_t rel, const Move *moves, const int *searched, int count) {
    for (;;) {
        uint64_t before = rel;
        for (int i = 0; i < count; i++)
            if (searched[i] && ((rel >> moves[i].top) & 1)) rel |= from_card_up(moves[i].card);
        if (rel == before) return rel;
    }
}

/* What the last card of a trick found about the trick boundary it leads to before searching
   it: the boundary itself (the card played, kept so that searching it does not play it again,
   and the cards that decided the trick), its value (`decided`, with `rel`), or else its key and
   stored best lead. */
typedef struct {
    int decided;
    int32_t value;
    uint64_t rel;
    int preferred;
    Key key;
    Node child;
    uint64_t decided_by;
} Known;

static int32_t alpha_beta(Search *search, const Node *node, int32_t alpha, int32_t beta,
                          uint64_t *rel, const Known *known);

/* Whether a run of `card`'s suit lying wholly below the relevant cards `all` was searched,
   `searched_tops` holding the highest card of every run searched (a relevant set holds every
   card of a suit from some rank up, so a run lies below it when its highest card does). */
static inline int small_run_searched(uint64_t searched_tops, uint64_t all, int card) {
    return (searched_tops & SUIT_FIELD(card >> 4) & ~all) != 0;
}

/* The table of search->at_least[seat], or NULL when memory ran out. */
static const int32_t *at_least(Search *search, int seat) {
    if (search->at_least[seat] != NULL) return search->at_least[seat];
    int size = search->size, layers = search->tricks_left + 1, players = search->players;
    int32_t *table = malloc(sizeof(int32_t) * 2 * (size_t)layers * (size_t)size);
    if (table == NULL) {
        search->failed = 1;
        return NULL;
    }
    memcpy(table, search->low, sizeof(int32_t) * (size_t)size);
    memcpy(table + size, search->high, sizeof(int32_t) * (size_t)size);
    for (int q = 1; q < layers; q++) {
        int32_t *low = table + 2 * (size_t)q * size, *high = low + size;
        const int32_t *fewer_low = low - 2 * size, *fewer_high = fewer_low + size;
        for (int index = size - 1; index >= 0; index--) {
            low[index] = INFINITE_VALUE;
            high[index] = -INFINITE_VALUE;
            if (search->totals[index] >= search->tricks_left) continue;
            for (int other = 0; other < players; other++) {
                int child = index + search->stride[other];
                int32_t l = other == seat ? fewer_low[child] : low[child];
                int32_t h = other == seat ? fewer_high[child] : high[child];
                if (l < low[index]) low[index] = l;
                if (h > high[index]) high[index] = h;
            }
        }
    }
    search->at_least[seat] = table;
    return table;
}

/* The last trick: every hand plays its one card. */
static int32_t last_trick(Search *search, const Node *node, uint64_t *rel) {
    Node child = *node;
    uint64_t decided = 0;
    for (int i = 0; i < search->players; i++)
        decided = play(search, &child, lowest_bit(child.hands[child.turn]));
    *rel = decided;
    return search->leaf[child.wins_index];
}

static int32_t search_move(Search *search, const Node *node, const Move *move, int32_t alpha,
                           int32_t beta, uint64_t *rel, const Known *known) {
    if (known != NULL) {
        if (known->decided) {
            *rel = known->rel | known->decided_by;
            return known->value;
        }
        int32_t value = alpha_beta(search, &known->child, alpha, beta, rel, known);
        *rel |= known->decided_by;
        return value;
    }
    Node child = *node;
    uint64_t decided = play(search, &child, move->card);
    int32_t value = alpha_beta(search, &child, alpha, beta, rel, NULL);
    *rel |= decided;
    return value;
}

/* The bounds and the table at a trick boundary: 1 and the value in `value` when they decide
   it for the window (alpha, beta); else 0, with `key` made and the stored best lead, if any,
   in `preferred`. */
static int boundary_bounds(Search *search, const Node *node, int32_t alpha, int32_t beta,
                           uint64_t *rel, int32_t *value, Key *key, int *preferred) {
    int32_t low = search->low[node->wins_index], high = search->high[node->wins_index];
    if (low >= beta || low == high) {
        *value = low;
        return 1;
    }
    if (high <= alpha) {
        *value = high;
        return 1;
    }
    if (__builtin_popcountll(node->hands[node->leader]) == 1) {
        *value = last_trick(search, node, rel);
        return 1;
    }
    if (search->additive) {
        /* Tricks: the side on lead takes at least its quick tricks. */
        int owner = 0;
        uint64_t used = 0;
        int trumps = top_trumps(search, node, &owner, &used);
        if (trumps) {
            if (search->maximizing[owner]) {
                if (low + trumps >= beta) {
                    *rel = used;
                    *value = low + trumps;
                    return 1;
                }
            } else if (high - trumps <= alpha) {
                *rel = used;
                *value = high - trumps;
                return 1;
            }
        }
        used = 0;
        int quick = quick_tricks(search, node, &used);
        if (quick) {
            if (search->maximizing[node->leader]) {
                if (low + quick >= beta) {
                    *rel = used;
                    *value = low + quick;
                    return 1;
                }
            } else if (high - quick <= alpha) {
                *rel = used;
                *value = high - quick;
                return 1;
            }
        }
    } else {
        /* Points: the top trumps' holder wins their tricks whatever anyone plays, and the
           seat on lead may cash its quick tricks; the value of every completion that
           gives them those tricks bounds this one. */
        int owner = 0;
        uint64_t used = 0;
        int trumps = top_trumps(search, node, &owner, &used);
        const int32_t *table;
        if (trumps && (table = at_least(search, owner)) != NULL) {
            int32_t floor = table[2 * (size_t)trumps * search->size + node->wins_index];
            int32_t ceiling = table[(2 * (size_t)trumps + 1) * search->size + node->wins_index];
            if (floor >= beta || ceiling <= alpha) {
                *rel = used;
                *value = floor >= beta ? floor : ceiling;
                return 1;
            }
        }
        used = 0;
        /* Quick tricks can decide nothing here when even winning every trick left could not
           (the bound only tightens with more tricks): then they are not counted. */
        int most = __builtin_popcountll(node->hands[node->leader]);
        table = at_least(search, node->leader);
        int quick = 0;
        if (table != NULL) {
            size_t layer = 2 * (size_t)most * search->size + node->wins_index;
            if (search->maximizing[node->leader] ? table[layer] >= beta
                                                 : table[layer + search->size] <= alpha)
                quick = quick_tricks(search, node, &used);
        }
        if (quick) {
            size_t layer = 2 * (size_t)quick * search->size + node->wins_index;
            if (search->maximizing[node->leader]) {
                if (table[layer] >= beta) {
                    *rel = used;
                    *value = table[layer];
                    return 1;
                }
            } else if (table[layer + search->size] <= alpha) {
                *rel = used;
                *value = table[layer + search->size];
                return 1;
            }
        }
    }
    key_of(search, node, key);
    int32_t offset = search->offset[node->wins_index];
    int32_t lower = -INFINITE_VALUE, upper = INFINITE_VALUE;
    const Entry *lower_entry = NULL, *upper_entry = NULL;
    STAT(boundary);
    const Shape *shape = shape_slot(search, key);
    if (shape->start != NO_ENTRY) {
        /* Newest first: a run read from its end. */
        const Entry *run = search->entries + shape->start;
        for (uint32_t i = shape->count; i-- > 0;) {
            const Entry *entry = &run[i];
            STAT(walk);
            if (!entry_matches(entry, key)) continue;
            if (entry->lower > -STORED_INFINITY && entry->lower + offset > lower) {
                lower = entry->lower + offset;
                lower_entry = entry;
            }
            if (entry->upper < STORED_INFINITY && entry->upper + offset < upper) {
                upper = entry->upper + offset;
                upper_entry = entry;
            }
            if (lower >= beta || upper <= alpha) STAT(hits);
            if (lower >= beta) {
                *rel = entry_rel(lower_entry, key);
                *value = lower;
                return 1;
            }
            if (upper <= alpha) {
                *rel = entry_rel(upper_entry, key);
                *value = upper;
                return 1;
            }
            if (*preferred < 0 && entry->best_above >= 0)
                *preferred = card_with_above(node->hands[node->leader], node->out,
                                            entry->best_suit, entry->best_above);
        }
    }
    return 0;
}

static int32_t alpha_beta(Search *search, const Node *node, int32_t alpha, int32_t beta,
                          uint64_t *rel, const Known *known) {
    Key key;
    key.shape = 0, key.extra = 0, key.hash = 0;
    int at_boundary = node->trick_length == 0;
    int preferred = -1;
    *rel = 0;
    STAT(nodes);
    if (known != NULL) {
        key = known->key;
        preferred = known->preferred;
    } else if (at_boundary) {
        int32_t value;
        if (boundary_bounds(search, node, alpha, beta, rel, &value, &key, &preferred)) return value;
    }
    Move moves[MAX_MOVES];
    int searched[MAX_MOVES];
    int count = moves_of(search, node, moves, preferred);
    int maximizing = search->maximizing[node->turn];
    /* Enhanced transposition cut-off: at the last card of a trick, the bounds and the table
       of every trick boundary it can lead to are read first, and a child they decide the node
       by ends it at once, whatever its place in the move order. A null window (the probes')
       stays the same until a cut-off, so what was read serves the children's own searches.
       Points only: the tricks search, whose static move order suits it, gains nothing. */
    Known knowns[MAX_MOVES];
    int knowing = !search->additive && node->trick_length == search->players - 1 &&
                  beta == alpha + 1 &&
                  __builtin_popcountll(node->hands[node->turn]) > KNOWN_MIN_CARDS;
    if (knowing) {
        for (int i = 0; i < count; i++) {
            Known *known_child = &knowns[i];
            Node *child_node = &known_child->child;
            *child_node = *node;
            uint64_t decided = play(search, child_node, moves[i].card);
            known_child->decided_by = decided;
            known_child->preferred = -1;
            known_child->rel = 0;
            known_child->decided =
                boundary_bounds(search, child_node, alpha, beta, &known_child->rel,
                                &known_child->value, &known_child->key, &known_child->preferred);
            if (known_child->decided &&
                (maximizing ? known_child->value >= beta : known_child->value <= alpha)) {
                search->history[node->turn * 64 + moves[i].card] += 1;
                *rel = known_child->rel | decided;
                return known_child->value;
            }
        }
    }
    int32_t best = maximizing ? -INFINITE_VALUE : INFINITE_VALUE;
    int best_card = -1;
    int32_t a = alpha, b = beta;
    uint64_t all = 0; /* the cards the searched moves relied on */
    /* A run below every relevant card of its suit stands for the others like it (DDS's "one
       small card a suit"): once one is searched, the others are skipped, and checked again
       against the relevant cards at the end (which may have grown since). */
    for (int i = 0; i < count; i++) searched[i] = 0;
    uint64_t searched_tops = 0;
    for (int cursor = 0;;) {
        int next = -1;
        while (cursor < count && next < 0) {
            int i = cursor++;
            if ((all >> moves[i].top) & 1 ||
                !small_run_searched(searched_tops, all, moves[i].card))
                next = i;
        }
        if (next < 0) {
            /* Every move searched or skipped: a skipped run must still be small, and some
               small run of its suit searched. */
            all = close_runs(all, moves, searched, count);
            for (int i = 0; i < count && next < 0; i++)
                if (!searched[i] && ((all >> moves[i].top) & 1 ||
                                     !small_run_searched(searched_tops, all, moves[i].card)))
                    next = i;
            if (next < 0) {
                *rel = all;
                break;
            }
        }
        uint64_t child_rel;
        int32_t value = search_move(search, node, &moves[next], a, b, &child_rel,
                                    knowing ? &knowns[next] : NULL);
        searched[next] = 1;
        searched_tops |= (uint64_t)1 << moves[next].top;
        if (maximizing ? value > best : value < best) {
            best = value;
            best_card = moves[next].card;
        }
        if (maximizing) {
            if (best > a) a = best;
        } else if (best < b) {
            b = best;
        }
        if (a >= b) {
            search->history[node->turn * 64 + moves[next].card] += 1;
            *rel = child_rel;
            break;
        }
        all |= child_rel;
    }
    if (at_boundary)
        store(search, &key, *rel, best, alpha, beta, search->offset[node->wins_index], best_card,
              node->out);
    return best;
}

/* The exact value of a node: null-window searches until the bounds meet (MTD(f)), starting
   from `guess` within the bounds of the tricks won so far. A run of probes that all fail the
   same way doubles its step (the points objective moves a bag at a time, and a search that
   only proves "one point less" would otherwise take one probe per point). `relied` gets the
   cards every probe relied on, for which the value holds as a search result's does. */
static int32_t exact_value(Search *search, const Node *node, int32_t guess, uint64_t *relied) {
    int32_t lower = search->low[node->wins_index], upper = search->high[node->wins_index];
    int32_t beta = guess, step = 1;
    int last = 0;
    *relied = 0;
    while (lower < upper) {
        if (beta <= lower) beta = lower + 1;
        if (beta > upper) beta = upper;
        uint64_t rel;
        int32_t value = alpha_beta(search, node, beta - 1, beta, &rel, NULL);
        *relied |= rel;
        int direction = value >= beta ? 1 : -1;
        if (direction > 0)
            lower = value;
        else
            upper = value;
        step = direction == last ? step * 2 : 1;
        last = direction;
        beta = direction > 0 ? lower + step : upper - step + 1;
    }
    return lower;
}

/* ---- Wins classes ---- */

/* Fills low, high, offset and wins_class for every partial count (see the header). */
static int classify_wins(Search *search, int size) {
    int players = search->players, tricks_left = search->tricks_left, base = tricks_left + 1;
    int slots = 1;
    while (slots < 2 * size) slots <<= 1;
    int *totals = malloc(sizeof(int) * (size_t)size);
    int *completions = malloc(sizeof(int) * (size_t)size);
    uint64_t *hashes = malloc(sizeof(uint64_t) * (size_t)size);
    int *table = malloc(sizeof(int) * (size_t)slots);
    if (totals == NULL || completions == NULL || hashes == NULL || table == NULL) {
        free(totals);
        free(completions);
        free(hashes);
        free(table);
        return -1;
    }
    for (int index = 0; index < size; index++) {
        int rest = index, total = 0;
        for (int seat = 0; seat < players; seat++) {
            total += rest % base;
            rest /= base;
        }
        totals[index] = total;
    }
    /* Bounds of every partial count, from the complete counts down (a child's index is
       larger than its parent's, so a descending sweep sees children first). */
    for (int index = size - 1; index >= 0; index--) {
        search->wins_class[index] = 0;
        search->offset[index] = 0;
        if (totals[index] > tricks_left) continue;
        if (totals[index] == tricks_left) {
            search->low[index] = search->high[index] = search->leaf[index];
            continue;
        }
        int32_t low = INFINITE_VALUE, high = -INFINITE_VALUE;
        for (int seat = 0; seat < players; seat++) {
            int child = index + search->stride[seat];
            if (search->low[child] < low) low = search->low[child];
            if (search->high[child] > high) high = search->high[child];
        }
        search->low[index] = low;
        search->high[index] = high;
    }
    /* Classes: per total, the completions in a fixed order; a partial count's completion
       values less the first one name its class (compared in full, not only by hash). The
       class is named by its first member's index. */
    for (int total = 0; total <= tricks_left; total++) {
        int remaining = tricks_left - total, n = 0;
        for (int index = 0; index < size; index++)
            if (totals[index] == remaining) completions[n++] = index;
        memset(table, 0xFF, sizeof(int) * (size_t)slots);
        for (int index = 0; index < size; index++) {
            if (totals[index] != total) continue;
            int32_t first = search->leaf[index + completions[0]];
            uint64_t hash = 1469598103934665603ULL;
            for (int c = 0; c < n; c++) {
                uint32_t delta = (uint32_t)(search->leaf[index + completions[c]] - first);
                hash = (hash ^ delta) * 1099511628211ULL;
            }
            hashes[index] = hash;
            search->offset[index] = first;
            int slot = (int)((hash ^ (hash >> 32)) & (uint64_t)(slots - 1));
            int found = -1;
            while (table[slot] >= 0) {
                int other = table[slot];
                if (hashes[other] == hash) {
                    int same = 1;
                    for (int c = 0; c < n && same; c++)
                        same = search->leaf[index + completions[c]] - first ==
                               search->leaf[other + completions[c]] - search->offset[other];
                    if (same) {
                        found = other;
                        break;
                    }
                }
                slot = (slot + 1) & (slots - 1);
            }
            if (found < 0) {
                table[slot] = index;
                found = index;
            }
            search->wins_class[index] = found;
        }
    }
    search->totals = totals;
    free(completions);
    free(hashes);
    free(table);
    return 0;
}

static int read_int_tuple(PyObject *sequence, int *out, int count, const char *name) {
    PyObject *fast = PySequence_Fast(sequence, name);
    if (fast == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(fast) != count) {
        PyErr_Format(PyExc_ValueError, "%s must have %d items", name, count);
        Py_DECREF(fast);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        long value = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (value == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        out[i] = (int)value;
    }
    Py_DECREF(fast);
    return 0;
}

/* ---- The Python interface: a search context, and the values of a position's cards ---- */

#define CONTEXT_NAME "spades.solver._search.Context"

static void free_search(Search *search) {
    if (search == NULL) return;
    free(search->bounds);
    free(search->owned_leaf);
    free(search->shapes);
    free(search->entries);
    free(search->totals);
    for (int seat = 0; seat < 4; seat++) free(search->at_least[seat]);
    free(search);
}

static void destroy_context(PyObject *capsule) {
    free_search(PyCapsule_GetPointer(capsule, CONTEXT_NAME));
}

static const char context_doc[] =
    "context(players, next_seat, maximizing, must_break, tricks, leaf, additive,\n"
    "        max_entries=0) -> Context\n\n"
    "A search for every position of a hand with these rules, bids and bags: the leaf table\n"
    "values each way the hand's `tricks` tricks can fall, indexed from the hand's start, and\n"
    "the transposition table it keeps serves every position solved in it, holding at most\n"
    "`max_entries` entries (0: the most it may, about two million). Internal: call it\n"
    "through spades.solver.";

static PyObject *context(PyObject *module, PyObject *args) {
    int players, must_break, tricks, additive, max_entries = 0;
    PyObject *next_seat, *maximizing;
    Py_buffer leaf;
    if (!PyArg_ParseTuple(args, "iOOpiy*p|i", &players, &next_seat, &maximizing, &must_break,
                          &tricks, &leaf, &additive, &max_entries))
        return NULL;
    Search *search = calloc(1, sizeof(Search));
    if (search == NULL) {
        PyBuffer_Release(&leaf);
        return PyErr_NoMemory();
    }
    if (players < 3 || players > 4 || tricks < 0 || tricks > 18) {
        PyErr_SetString(PyExc_ValueError, "3 or 4 players and 0..18 tricks");
        goto failed;
    }
    if (max_entries < 0) {
        PyErr_SetString(PyExc_ValueError, "max_entries must not be negative");
        goto failed;
    }
    search->entry_limit = max_entries == 0 || (uint32_t)max_entries > MAX_ENTRIES
                              ? MAX_ENTRIES
                              : (uint32_t)max_entries;
    search->players = players;
    search->must_break = must_break;
    search->additive = additive;
    search->tricks_left = tricks;
    if (read_int_tuple(next_seat, search->next, players, "next_seat") < 0) goto failed;
    if (read_int_tuple(maximizing, search->maximizing, players, "maximizing") < 0) goto failed;
    int size = 1;
    for (int seat = 0; seat < players; seat++) {
        search->stride[seat] = size;
        size *= tricks + 1;
    }
    if (leaf.len != (Py_ssize_t)size * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_Format(PyExc_ValueError, "the leaf table must hold %d int32 values", size);
        goto failed;
    }
    search->owned_leaf = malloc(sizeof(int32_t) * (size_t)size);
    search->bounds = malloc(sizeof(int32_t) * 4 * (size_t)size);
    search->shapes = malloc(sizeof(Shape) << 16);
    if (search->owned_leaf == NULL || search->bounds == NULL || search->shapes == NULL) {
        PyErr_NoMemory();
        goto failed;
    }
    memcpy(search->owned_leaf, leaf.buf, sizeof(int32_t) * (size_t)size);
    search->leaf = search->owned_leaf;
    search->low = search->bounds;
    search->high = search->bounds + size;
    search->offset = search->bounds + 2 * size;
    search->wins_class = search->bounds + 3 * size;
    search->size = size;
    if (classify_wins(search, size) < 0) {
        PyErr_NoMemory();
        goto failed;
    }
    search->shape_mask = (1u << 16) - 1;
    clear_table(search);
    search->clears = 0; /* a new table, not an emptied one */
    PyBuffer_Release(&leaf);
    PyObject *capsule = PyCapsule_New(search, CONTEXT_NAME, destroy_context);
    if (capsule == NULL) free_search(search);
    return capsule;

failed:
    PyBuffer_Release(&leaf);
    free_search(search);
    return NULL;
}

static const char solve_doc[] =
    "solve(context, hands, trick, leader, broken, wins_index, root_cards) -> list[int]\n\n"
    "The value of each root card (card codes: suit * 16 + strength) of a position of the\n"
    "context's hand, `wins_index` counting the tricks each seat has taken so far. Not\n"
    "thread-safe for one context. Internal: call it through spades.solver, which translates\n"
    "and checks the position.";

static PyObject *solve(PyObject *module, PyObject *args) {
    PyObject *capsule, *hands, *trick, *root_cards;
    int leader, broken, wins_index;
    if (!PyArg_ParseTuple(args, "OOOipiO", &capsule, &hands, &trick, &leader, &broken,
                          &wins_index, &root_cards))
        return NULL;
    Search *search = PyCapsule_GetPointer(capsule, CONTEXT_NAME);
    if (search == NULL) return NULL;
    int players = search->players;
    PyObject *result = NULL;
    Node root;
    memset(&root, 0, sizeof root);
    int *roots = NULL, *root_tops = NULL;
    uint64_t *root_rels = NULL;
    int32_t *root_values = NULL;
    PyObject *trick_fast = NULL, *roots_fast = NULL;

    PyObject *hands_fast = PySequence_Fast(hands, "hands");
    if (hands_fast == NULL) goto done;
    if (PySequence_Fast_GET_SIZE(hands_fast) != players) {
        Py_DECREF(hands_fast);
        PyErr_SetString(PyExc_ValueError, "one hand per seat");
        goto done;
    }
    for (int seat = 0; seat < players; seat++) {
        root.hands[seat] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(hands_fast, seat));
        if (PyErr_Occurred()) {
            Py_DECREF(hands_fast);
            goto done;
        }
        root.out |= root.hands[seat];
    }
    Py_DECREF(hands_fast);
    if (wins_index < 0 || wins_index >= search->size) {
        PyErr_SetString(PyExc_ValueError, "wins_index outside the leaf table");
        goto done;
    }
    root.wins_index = wins_index;

    trick_fast = PySequence_Fast(trick, "trick");
    if (trick_fast == NULL) goto done;
    Py_ssize_t played = PySequence_Fast_GET_SIZE(trick_fast);
    if (played >= players) {
        PyErr_SetString(PyExc_ValueError, "a trick in progress has fewer cards than players");
        goto done;
    }
    root.leader = leader;
    root.turn = leader;
    root.broken = broken;
    for (Py_ssize_t i = 0; i < played; i++) {
        int pair[2];
        if (read_int_tuple(PySequence_Fast_GET_ITEM(trick_fast, i), pair, 2, "trick play") < 0)
            goto done;
        root.trick_cards[i] = pair[1];
        root.trick_seats[i] = pair[0];
        root.out |= (uint64_t)1 << pair[1];
        root.turn = search->next[pair[0]];
    }
    root.trick_length = (int)played;
    int tricks_left = __builtin_popcountll(root.hands[root.leader]) + (played ? 1 : 0);
    if (search->totals[wins_index] + tricks_left != search->tricks_left) {
        PyErr_SetString(PyExc_ValueError, "the tricks taken and the tricks left do not add up");
        goto done;
    }

    roots_fast = PySequence_Fast(root_cards, "root_cards");
    if (roots_fast == NULL) goto done;
    Py_ssize_t root_count = PySequence_Fast_GET_SIZE(roots_fast);
    roots = malloc(sizeof(int) * (size_t)(root_count + 1));
    root_tops = malloc(sizeof(int) * (size_t)(root_count + 1));
    root_rels = malloc(sizeof(uint64_t) * (size_t)(root_count + 1));
    root_values = malloc(sizeof(int32_t) * (size_t)(root_count + 1));
    if (roots == NULL || root_values == NULL || root_tops == NULL || root_rels == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < root_count; i++) {
        long card = PyLong_AsLong(PySequence_Fast_GET_ITEM(roots_fast, i));
        if (card == -1 && PyErr_Occurred()) goto done;
        if (card < 0 || card > 63 || !((root.hands[root.turn] >> card) & 1)) {
            PyErr_Format(PyExc_ValueError, "root card %ld is not in the hand to play", card);
            goto done;
        }
        roots[i] = (int)card;
    }

    Py_BEGIN_ALLOW_THREADS;
    int32_t guess = (search->low[wins_index] + search->high[wins_index]) / 2;
    for (Py_ssize_t i = 0; i < root_count; i++) {
        int bottom = run_bottom(root.hands[root.turn], root.out, roots[i]);
        Py_ssize_t same = -1;
        for (Py_ssize_t j = 0; j < i; j++)
            if (run_bottom(root.hands[root.turn], root.out, roots[j]) == bottom) same = j;
        if (same >= 0) {
            root_values[i] = root_values[same];
            root_tops[i] = -1;
            continue;
        }
        /* A small card stands for another: an earlier root of its suit whose run, and this
           one, lie below every card of that suit its value relied on (as in the search). */
        int top = run_top(root.hands[root.turn], root.out, roots[i]);
        for (Py_ssize_t j = 0; j < i && same < 0; j++)
            if (root_tops[j] >= 0 && (root_tops[j] >> 4) == (top >> 4) &&
                !((root_rels[j] >> root_tops[j]) & 1) && !((root_rels[j] >> top) & 1))
                same = j;
        if (same >= 0) {
            root_values[i] = root_values[same];
            root_tops[i] = -1;
            continue;
        }
        Node child = root;
        uint64_t decided = play(search, &child, roots[i]);
        root_values[i] = exact_value(search, &child, guess, &root_rels[i]);
        root_rels[i] |= decided;
        root_tops[i] = top;
        guess = root_values[i];
    }
    Py_END_ALLOW_THREADS;

    result = PyList_New(root_count);
    if (result == NULL) goto done;
    for (Py_ssize_t i = 0; i < root_count; i++)
        PyList_SET_ITEM(result, i, PyLong_FromLong(root_values[i]));

done:
    Py_XDECREF(trick_fast);
    Py_XDECREF(roots_fast);
    free(roots);
    free(root_tops);
    free(root_rels);
    free(root_values);
    return result;
}

static int by_start(const void *a, const void *b) {
    const Shape *x = *(const Shape *const *)a, *y = *(const Shape *const *)b;
    return (x->start > y->start) - (x->start < y->start);
}

static const char check_table_doc[] =
    "check_table(context) -> int\n\n"
    "Checks the layout of the context's transposition table: every shape's run inside the\n"
    "pool's used part, holding no more entries than its length, no two runs overlapping, the\n"
    "pool within its limit, every shape found by its slot's probe. Returns the entries held;\n"
    "raises AssertionError naming the first broken rule. For tests.";

static PyObject *check_table(PyObject *module, PyObject *capsule) {
    const Search *search = PyCapsule_GetPointer(capsule, CONTEXT_NAME);
    if (search == NULL) return NULL;
    const char *broken = NULL;
    if (search->entry_count > search->entry_capacity ||
        search->entry_capacity > search->entry_limit)
        broken = "the pool's used part, its size and its limit are out of order";
    uint32_t slots = search->shape_mask + 1, used = 0;
    const Shape **runs = malloc(sizeof(Shape *) * (size_t)slots);
    if (runs == NULL) return PyErr_NoMemory();
    for (uint32_t i = 0; i < slots && broken == NULL; i++) {
        const Shape *shape = &search->shapes[i];
        if (shape->start == NO_ENTRY) continue;
        if (shape->count > shape->capacity)
            broken = "a run holds more entries than its length";
        else if ((uint64_t)shape->start + shape->capacity > search->entry_count)
            broken = "a run reaches past the pool's used part";
        else {
            Key key = {.shape = shape->shape, .extra = shape->extra,
                       .hash = shape_hash(shape->shape, shape->extra)};
            if (shape_slot(search, &key) != shape) broken = "a shape its slot's probe misses";
        }
        runs[used++] = shape;
    }
    if (broken == NULL && used != search->shape_count)
        broken = "the shapes counted and the shapes held differ";
    if (broken == NULL) {
        qsort(runs, used, sizeof(Shape *), by_start);
        for (uint32_t i = 1; i < used && broken == NULL; i++)
            if (runs[i - 1]->start + runs[i - 1]->capacity > runs[i]->start)
                broken = "two runs overlap";
    }
    uint64_t entries = 0;
    for (uint32_t i = 0; i < used; i++) entries += runs[i]->count;
    free(runs);
    if (broken != NULL) {
        PyErr_SetString(PyExc_AssertionError, broken);
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(entries);
}

static const char table_counts_doc[] =
    "table_counts(context) -> dict[str, int]\n\n"
    "How often the context's transposition table was packed ('packs'), had the shapes of\n"
    "fewest tricks left dropped to make room ('drops'), and was emptied ('clears'). For tests.";

static PyObject *table_counts(PyObject *module, PyObject *capsule) {
    const Search *search = PyCapsule_GetPointer(capsule, CONTEXT_NAME);
    if (search == NULL) return NULL;
    return Py_BuildValue("{sKsKsK}", "packs", (unsigned long long)search->packs, "drops",
                         (unsigned long long)search->drops, "clears",
                         (unsigned long long)search->clears);
}

#ifdef SOLVER_STATS
static PyObject *stats(PyObject *module, PyObject *args) {
    PyObject *result = Py_BuildValue("{sKsKsKsKsK}", "nodes", stat_nodes, "boundary",
                                     stat_boundary, "walk", stat_walk, "hits", stat_hits, "runs",
                                     stat_runs);
    stat_nodes = stat_boundary = stat_walk = stat_hits = stat_runs = 0;
    return result;
}
#endif

static PyMethodDef methods[] = {
#ifdef SOLVER_STATS
    {"stats", stats, METH_NOARGS, "The search's counters since the last call (tuning builds)."},
#endif
    {"context", context, METH_VARARGS, context_doc},
    {"check_table", check_table, METH_O, check_table_doc},
    {"table_counts", table_counts, METH_O, table_counts_doc},
    {"solve", solve, METH_VARARGS, solve_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "spades.solver._search",
    "The compiled double-dummy search of spades.solver (internal).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__search(void) { return PyModule_Create(&module_definition); }
