/* The double-dummy search of spades.solver, in C: alpha-beta over the cards left in every hand.

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
   paranoid coalition). Tricks are searched with null-window alpha-beta (MTD(f)), equivalent
   cards (adjacent in one hand once the cards between them are gone) searched once, simple
   move ordering, and a transposition table at trick boundaries keyed by the cards left in
   each hand, the leader, whether spades are broken and, unless the objective adds trick by
   trick ("additive"), the tricks won so far. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SUIT_BITS 16
#define SPADES 3
#define INFINITE_VALUE 1000000000
/* Bounds are stored in 16 bits (a hand's points stay far inside): beyond is "unbounded". */
#define STORED_INFINITY 32000
#define SUIT_FIELD(suit) ((uint64_t)0xFFFF << (SUIT_BITS * (suit)))

typedef struct {
    uint64_t hands[4];
    uint64_t hash;
    int trick_cards[4];
    int trick_seats[4];
    int trick_length;
    int leader;
    int turn;
    int broken;
    int wins_index;
} Node;

typedef struct {
    uint64_t key;
    int16_t lower; /* relative to the offset: see alpha_beta */
    int16_t upper;
    /* The best lead found here: its suit and how many cards still out rank above it in that
       suit (-1: none), so it names the same card in any position with the same relative
       ranks. */
    int8_t best_suit;
    int8_t best_above;
    /* Cards left at this position: of two candidates for a slot, the one with more cards
       (higher in the tree, costlier to search again) stays. */
    uint8_t cards;
} Entry;

typedef struct {
    int players;
    int next[4];
    int maximizing[4];
    int must_break;
    int additive;
    int stride[4];
    const int32_t *leaf;
    int32_t *low;
    int32_t *high;
    int32_t *offset;
    Entry *table;
    uint64_t table_mask;
    uint64_t card_keys[4][64];
    uint64_t leader_keys[4];
    uint64_t broken_key;
    uint64_t wins_multiplier;
    uint64_t suit_multipliers[4];
    /* Per seat and card: how often it cut off a search (the history heuristic), which
       breaks ties of the static move ordering. */
    uint32_t *history;
    int tricks_left;
} Search;

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline int highest_bit(uint64_t x) { return 63 - __builtin_clzll(x); }

static inline int trick_winner(const Node *node, int length) {
    int best = 0;
    for (int i = 1; i < length; i++) {
        int card = node->trick_cards[i], top = node->trick_cards[best];
        int suit = card >> 4, top_suit = top >> 4;
        if ((suit == top_suit && card > top) || (suit == SPADES && top_suit != SPADES)) best = i;
    }
    return best;
}

static void play(const Search *search, Node *node, int card) {
    int seat = node->turn;
    node->hands[seat] &= ~((uint64_t)1 << card);
    node->hash ^= search->card_keys[seat][card];
    if ((card >> 4) == SPADES) node->broken = 1;
    node->trick_cards[node->trick_length] = card;
    node->trick_seats[node->trick_length] = seat;
    node->trick_length++;
    if (node->trick_length == search->players) {
        int winner = node->trick_seats[trick_winner(node, node->trick_length)];
        node->wins_index += search->stride[winner];
        node->trick_length = 0;
        node->leader = node->turn = winner;
    } else {
        node->turn = search->next[seat];
    }
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

/* The cards still out (in a hand or on the table): two cards of one hand with none of these
   between them are equivalent. */
static uint64_t cards_out(const Search *search, const Node *node) {
    uint64_t out = 0;
    for (int seat = 0; seat < search->players; seat++) out |= node->hands[seat];
    for (int i = 0; i < node->trick_length; i++) out |= (uint64_t)1 << node->trick_cards[i];
    return out;
}

/* The lowest card of the run of equivalent cards `card` belongs to. */
static int run_bottom(uint64_t hand, uint64_t out, int card) {
    int floor = card & ~15;
    while (card > floor) {
        int below = card - 1;
        while (below >= floor && !((out >> below) & 1)) below--;
        if (below < floor || !((hand >> below) & 1)) break;
        card = below;
    }
    return card;
}

typedef struct {
    int card;
    int score;
} Move;

/* One move per run of equivalent legal cards (its lowest card), best-looking first. */
static int moves_of(const Search *search, const Node *node, Move *moves, int preferred) {
    uint64_t legal = legal_cards(search, node);
    uint64_t hand = node->hands[node->turn];
    uint64_t out = cards_out(search, node);
    int count = 0;
    int mine = search->maximizing[node->turn];
    int winning_card = -1, partner_winning = 0;
    if (node->trick_length) {
        int best = trick_winner(node, node->trick_length);
        winning_card = node->trick_cards[best];
        partner_winning = search->maximizing[node->trick_seats[best]] == mine;
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
            int beats = (suit == top_suit && bottom > winning_card) ||
                        (suit == SPADES && top_suit != SPADES);
            if (partner_winning)
                score = beats ? 10 - rank : 50 - rank;
            else if (beats)
                score = (last ? 80 : 60) - rank - (suit != top_suit ? 10 : 0);
            else
                score = 40 - rank;
        }
        if (preferred >= bottom && preferred <= top) score += 100000;
        moves[count].card = bottom;
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

/* The key of a position at a trick boundary. Only the order of the cards still out matters,
   not their ranks, so each suit is keyed by the owners of its remaining cards from the top
   (2 bits each, with a leading 1 for the count): positions that differ only in which lower
   cards are gone share their entry. */
static uint64_t key_of(const Search *search, const Node *node) {
    uint64_t key = search->leader_keys[node->leader];
    if (node->broken) key ^= search->broken_key;
    if (!search->additive) key ^= (uint64_t)(node->wins_index + 1) * search->wins_multiplier;
    for (int suit = 0; suit < 4; suit++) {
        uint64_t owners = 1;
        uint32_t fields[4];
        uint32_t out = 0;
        for (int seat = 0; seat < search->players; seat++) {
            fields[seat] = (uint32_t)(node->hands[seat] >> (SUIT_BITS * suit)) & 0xFFFF;
            out |= fields[seat];
        }
        while (out) {
            int bit = 31 - __builtin_clz(out);
            out &= ~(1u << bit);
            int owner = 0;
            while (!((fields[owner] >> bit) & 1)) owner++;
            owners = owners << 2 | (uint64_t)owner;
        }
        key ^= (owners + (uint64_t)suit) * search->suit_multipliers[suit];
        key = (key ^ (key >> 29)) * 0xBF58476D1CE4E5B9ULL;
    }
    return key | 1; /* 0 marks an empty slot */
}

/* How many cards still out rank above `card` in its suit. */
static int cards_above(uint64_t out, int card) {
    uint64_t field = SUIT_FIELD(card >> 4);
    return __builtin_popcountll(out & field & ~(((uint64_t)2 << card) - 1));
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
   could ruff; in trumps (when it may lead them), its run from the top. */
static int quick_tricks(const Search *search, const Node *node) {
    int leader = node->leader;
    int side = search->maximizing[leader];
    uint64_t hand = node->hands[leader];
    uint64_t out = 0;
    for (int seat = 0; seat < search->players; seat++) out |= node->hands[seat];
    int total = 0;
    for (int suit = 0; suit < 4; suit++) {
        uint64_t field = SUIT_FIELD(suit);
        if (!(hand & field)) continue;
        if (suit == SPADES && search->must_break && !node->broken && (hand & ~field)) continue;
        int run = 0;
        uint64_t rest = out & field;
        while (rest) {
            int top = highest_bit(rest);
            if (!((hand >> top) & 1)) break;
            run++;
            rest &= ~((uint64_t)1 << top);
        }
        if (!run) continue;
        if (suit != SPADES) {
            for (int seat = 0; seat < search->players; seat++) {
                if (search->maximizing[seat] == side) continue;
                if (!(node->hands[seat] & SUIT_FIELD(SPADES))) continue;
                int length = __builtin_popcountll(node->hands[seat] & field);
                if (length < run) run = length;
            }
        }
        total += run;
    }
    return total;
}

/* The highest trump still out wins whatever trick it is played to, and so does every trump
   below it in the same hand down to the first one held elsewhere: that hand's side takes at
   least that many tricks. Returns the run's length and its seat. */
static int top_trumps(const Search *search, const Node *node, int *owner) {
    uint64_t trumps[4], out = 0;
    for (int seat = 0; seat < search->players; seat++) {
        trumps[seat] = node->hands[seat] & SUIT_FIELD(SPADES);
        out |= trumps[seat];
    }
    if (!out) return 0;
    int top = highest_bit(out);
    int seat = 0;
    while (!((trumps[seat] >> top) & 1)) seat++;
    *owner = seat;
    int run = 0;
    while (out) {
        top = highest_bit(out);
        if (!((trumps[seat] >> top) & 1)) break;
        run++;
        out &= ~((uint64_t)1 << top);
    }
    return run;
}

static int32_t alpha_beta(const Search *search, const Node *node, int32_t alpha, int32_t beta) {
    uint64_t key = 0;
    Entry *entry = NULL;
    int preferred = -1;
    uint64_t out = 0;
    if (node->trick_length == 0) {
        int32_t low = search->low[node->wins_index], high = search->high[node->wins_index];
        if (low >= beta || low == high) return low;
        if (high <= alpha) return high;
        if (search->additive) {
            /* Tricks: the side on lead takes at least its quick tricks. */
            int owner = 0;
            int trumps = top_trumps(search, node, &owner);
            if (trumps) {
                if (search->maximizing[owner]) {
                    if (low + trumps >= beta) return low + trumps;
                } else {
                    if (high - trumps <= alpha) return high - trumps;
                }
            }
            int quick = quick_tricks(search, node);
            if (quick) {
                if (search->maximizing[node->leader]) {
                    int32_t floor = low + quick;
                    if (floor >= beta) return floor;
                } else {
                    int32_t ceiling = high - quick;
                    if (ceiling <= alpha) return ceiling;
                }
            }
        }
        key = key_of(search, node);
        /* Two slots per key; a new position takes the one holding fewer cards. */
        Entry *pair = &search->table[key & search->table_mask & ~(uint64_t)1];
        entry = pair[1].key == key || (pair[0].key != key && pair[1].cards < pair[0].cards)
                    ? &pair[1]
                    : &pair[0];
        for (int seat = 0; seat < search->players; seat++) out |= node->hands[seat];
        if (entry->key == key) {
            int32_t offset = search->offset[node->wins_index];
            if (entry->lower + offset >= beta) return entry->lower + offset;
            if (entry->upper + offset <= alpha) return entry->upper + offset;
            if (entry->best_above >= 0)
                preferred = card_with_above(node->hands[node->leader], out, entry->best_suit,
                                            entry->best_above);
        }
    }
    Move moves[20];
    int count = moves_of(search, node, moves, preferred);
    int maximizing = search->maximizing[node->turn];
    int32_t best = maximizing ? -INFINITE_VALUE : INFINITE_VALUE;
    int best_card = -1;
    int32_t a = alpha, b = beta;
    for (int i = 0; i < count; i++) {
        Node child = *node;
        play(search, &child, moves[i].card);
        int32_t value = alpha_beta(search, &child, a, b);
        if (maximizing ? value > best : value < best) {
            best = value;
            best_card = moves[i].card;
        }
        if (maximizing) {
            if (best > a) a = best;
        } else {
            if (best < b) b = best;
        }
        if (a >= b) {
            search->history[node->turn * 64 + moves[i].card] += 1;
            break;
        }
    }
    if (entry != NULL) {
        int32_t offset = search->offset[node->wins_index];
        if (entry->key != key) {
            entry->key = key;
            entry->cards = 0;
            for (int seat = 0; seat < search->players; seat++)
                entry->cards += (uint8_t)__builtin_popcountll(node->hands[seat]);
            entry->lower = -STORED_INFINITY;
            entry->upper = STORED_INFINITY;
        }
        entry->best_suit = (int8_t)(best_card >> 4);
        entry->best_above = (int8_t)cards_above(out, best_card);
        int32_t relative = best - offset;
        if (relative > STORED_INFINITY) relative = STORED_INFINITY;
        if (relative < -STORED_INFINITY) relative = -STORED_INFINITY;
        if (best <= alpha) {
            if (relative < entry->upper) entry->upper = (int16_t)relative;
        } else if (best >= beta) {
            if (relative > entry->lower) entry->lower = (int16_t)relative;
        } else {
            entry->lower = entry->upper = (int16_t)relative;
        }
    }
    return best;
}

/* The exact value of a node: null-window searches until the bounds meet (MTD(f)). */
static int32_t exact_value(const Search *search, const Node *node, int32_t guess) {
    int32_t lower = -INFINITE_VALUE, upper = INFINITE_VALUE, value = guess;
    while (lower < upper) {
        int32_t beta = value == lower ? value + 1 : value;
        value = alpha_beta(search, node, beta - 1, beta);
        if (value < beta)
            upper = value;
        else
            lower = value;
    }
    return value;
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

static const char solve_doc[] =
    "solve(players, next_seat, maximizing, hands, trick, leader, must_break, broken, tricks_left,\n"
    "      leaf, additive, root_cards) -> list[int]\n\n"
    "The value of each root card (card codes: suit * 16 + strength). Internal: call it through\n"
    "spades.solver, which translates and checks the position.";

static PyObject *solve(PyObject *module, PyObject *args) {
    int players, leader, must_break, broken, tricks_left, additive;
    PyObject *next_seat, *maximizing, *hands, *trick, *root_cards;
    Py_buffer leaf;
    if (!PyArg_ParseTuple(args, "iOOOOippiy*pO", &players, &next_seat, &maximizing, &hands, &trick,
                          &leader, &must_break, &broken, &tricks_left, &leaf, &additive,
                          &root_cards))
        return NULL;
    PyObject *result = NULL;
    Search search;
    memset(&search, 0, sizeof search);
    uint32_t history[4 * 64] = {0};
    Node root;
    memset(&root, 0, sizeof root);
    int32_t *bounds = NULL;
    int *roots = NULL;
    int32_t *root_values = NULL;
    PyObject *trick_fast = NULL, *roots_fast = NULL;

    if (players < 3 || players > 4 || tricks_left < 0 || tricks_left > 18) {
        PyErr_SetString(PyExc_ValueError, "3 or 4 players and 0..18 tricks left");
        goto done;
    }
    search.players = players;
    search.must_break = must_break;
    search.additive = additive;
    if (read_int_tuple(next_seat, search.next, players, "next_seat") < 0) goto done;
    if (read_int_tuple(maximizing, search.maximizing, players, "maximizing") < 0) goto done;
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
    }
    Py_DECREF(hands_fast);

    int size = 1;
    for (int seat = 0; seat < players; seat++) {
        search.stride[seat] = size;
        size *= tricks_left + 1;
    }
    if (leaf.len != (Py_ssize_t)size * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_Format(PyExc_ValueError, "the leaf table must hold %d int32 values", size);
        goto done;
    }
    search.leaf = (const int32_t *)leaf.buf;
    bounds = malloc(sizeof(int32_t) * 3 * (size_t)size);
    if (bounds == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    search.low = bounds;
    search.high = bounds + size;
    search.offset = bounds + 2 * size;
    /* Bounds of every partial count, from the complete counts down (a child's index is
       larger than its parent's, so a descending sweep sees children first). */
    for (int index = size - 1; index >= 0; index--) {
        int rest = index, total = 0, on_side = 0;
        for (int seat = 0; seat < players; seat++) {
            int wins = rest % (tricks_left + 1);
            rest /= tricks_left + 1;
            total += wins;
            if (search.maximizing[seat]) on_side += wins;
        }
        search.offset[index] = additive ? on_side : 0;
        if (total > tricks_left) continue;
        if (total == tricks_left) {
            search.low[index] = search.high[index] = search.leaf[index];
            continue;
        }
        int32_t low = INFINITE_VALUE, high = -INFINITE_VALUE;
        for (int seat = 0; seat < players; seat++) {
            int child = index + search.stride[seat];
            if (search.low[child] < low) low = search.low[child];
            if (search.high[child] > high) high = search.high[child];
        }
        search.low[index] = low;
        search.high[index] = high;
    }

    uint64_t seed = 0x5EED5EEDULL;
    for (int seat = 0; seat < 4; seat++) {
        for (int card = 0; card < 64; card++) search.card_keys[seat][card] = splitmix(&seed);
        search.leader_keys[seat] = splitmix(&seed);
    }
    search.broken_key = splitmix(&seed);
    search.wins_multiplier = splitmix(&seed) | 1;
    for (int suit = 0; suit < 4; suit++) search.suit_multipliers[suit] = splitmix(&seed) | 1;
    search.tricks_left = tricks_left;
    for (int seat = 0; seat < players; seat++)
        for (int card = 0; card < 64; card++)
            if ((root.hands[seat] >> card) & 1) root.hash ^= search.card_keys[seat][card];

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
        root.turn = search.next[pair[0]];
    }
    root.trick_length = (int)played;

    roots_fast = PySequence_Fast(root_cards, "root_cards");
    if (roots_fast == NULL) goto done;
    Py_ssize_t root_count = PySequence_Fast_GET_SIZE(roots_fast);
    roots = malloc(sizeof(int) * (size_t)(root_count + 1));
    root_values = malloc(sizeof(int32_t) * (size_t)(root_count + 1));
    if (roots == NULL || root_values == NULL) {
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

    int cards_left = 0;
    for (int seat = 0; seat < players; seat++) cards_left += __builtin_popcountll(root.hands[seat]);
    int table_bits = 10 + cards_left / 2;
    if (table_bits > 22) table_bits = 22;
    search.history = history;
    search.table = calloc((size_t)1 << table_bits, sizeof(Entry));
    if (search.table == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    search.table_mask = ((uint64_t)1 << table_bits) - 1;

    Py_BEGIN_ALLOW_THREADS;
    uint64_t out = cards_out(&search, &root);
    int32_t guess = (search.low[0] + search.high[0]) / 2;
    for (Py_ssize_t i = 0; i < root_count; i++) {
        int bottom = run_bottom(root.hands[root.turn], out, roots[i]);
        Py_ssize_t same = -1;
        for (Py_ssize_t j = 0; j < i; j++)
            if (run_bottom(root.hands[root.turn], out, roots[j]) == bottom) same = j;
        if (same >= 0) {
            root_values[i] = root_values[same];
            continue;
        }
        Node child = root;
        play(&search, &child, roots[i]);
        root_values[i] = exact_value(&search, &child, guess);
        guess = root_values[i];
    }
    Py_END_ALLOW_THREADS;

    result = PyList_New(root_count);
    if (result == NULL) goto done;
    for (Py_ssize_t i = 0; i < root_count; i++)
        PyList_SET_ITEM(result, i, PyLong_FromLong(root_values[i]));

done:
    PyBuffer_Release(&leaf);
    Py_XDECREF(trick_fast);
    Py_XDECREF(roots_fast);
    free(bounds);
    free(roots);
    free(root_values);
    free(search.table);
    return result;
}

static PyMethodDef methods[] = {
    {"solve", solve, METH_VARARGS, solve_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "spades.solver._search",
    "The compiled double-dummy search of spades.solver (internal).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__search(void) { return PyModule_Create(&module_definition); }
