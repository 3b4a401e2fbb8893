// A Node.js client of spades.v1 written from protos/ and docs/ alone, as a newcomer would (issue
// 10's "Node client" check): @grpc/grpc-js and @grpc/proto-loader read the .proto files, and the
// reason codes come from docs/errors.md's table, so nothing here knows the server's code.
//
// It plays whole matches (four Play streams and a Watch, all from the beginning), answering each
// prompt, now and then badly first (stale, ahead, impossible, off-suit, out of turn, empty), and
// checks what the contract promises: every refusal, of a call or in an ActionResult, is a
// google.rpc.Status with one ErrorInfo (domain spades.v1) whose reason docs/errors.md lists with
// that very status; prompts answer the last event's sequence; every stream ends with OK after
// SeedRevealed; a replaced stream ends ABORTED (STREAM_REPLACED); a stream opened on a finished
// table sends its snapshot and ends.
//
// Usage: node client.js ADDRESS REPO_ROOT MATCHES SEED
// Prints one JSON line (what it saw); exits 1 when anything broke the contract (each printed).
'use strict';
const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

const [address, root, matchesArg, seedArg] = process.argv.slice(2);
const protos = path.join(root, 'protos');
const definition = loader.loadSync(['spades/v1/lobby.proto', 'spades/v1/play.proto'], {
  keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true, includeDirs: [protos],
});
const spades = grpc.loadPackageDefinition(definition).spades.v1;
const rpc = new protobuf.Root();
rpc.resolvePath = (_, target) => path.join(protos, target);
rpc.loadSync(['google/rpc/status.proto', 'google/rpc/error_details.proto']);
const Status = rpc.lookupType('google.rpc.Status');
const ErrorInfo = rpc.lookupType('google.rpc.ErrorInfo');
const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';

// docs/errors.md's table of reason codes: code -> status name.
const catalogue = {};
for (const line of fs.readFileSync(path.join(root, 'docs', 'errors.md'), 'utf8').split('\n')) {
  const row = /^\| `([A-Z_]+)` \| `([A-Z_]+)` \|/.exec(line);
  if (row) catalogue[row[1]] = row[2];
}
const statusName = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));

// A seeded generator (mulberry32), so a failing run can be repeated.
let state = Number(seedArg || 1) >>> 0;
function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (items) => items[Math.floor(random() * items.length)];

const problems = [];
const seen = { refusals: 0, reasons: new Set(), messages: 0, endings: new Set(), matches: 0 };
function problem(text) {
  problems.push(text);
  console.log(`PROBLEM ${text}`);
}

// A refusal as docs/errors.md says a program reads it; returns its ErrorInfo.
function checkRefusal(where, code, status) {
  seen.refusals += 1;
  if (!status) return problem(`${where}: ${statusName[code]} without a google.rpc.Status`);
  if (status.code !== code) problem(`${where}: status.code ${status.code}, not ${code}`);
  const infos = (status.details || []).filter((detail) => detail.type_url === ERROR_INFO);
  if (infos.length !== 1) return problem(`${where}: ${infos.length} ErrorInfo details`);
  const info = ErrorInfo.decode(infos[0].value);
  seen.reasons.add(info.reason);
  if (info.domain !== 'spades.v1') problem(`${where}: ErrorInfo domain ${info.domain}`);
  if (!(info.reason in catalogue)) problem(`${where}: ${info.reason} is not in docs/errors.md`);
  else if (catalogue[info.reason] !== statusName[code]) {
    problem(`${where}: ${info.reason} is documented ${catalogue[info.reason]}, sent ${statusName[code]}`);
  }
  return info;
}

// A failed call's Status, from its grpc-status-details-bin trailer.
function callRefusal(where, error) {
  const trailer = error.metadata ? error.metadata.get('grpc-status-details-bin') : [];
  if (!trailer.length) return checkRefusal(where, error.code, null);
  const status = Status.toObject(Status.decode(trailer[0]), { defaults: true });
  const details = status.details.map((detail) => ({ type_url: detail.type_url || detail.typeUrl, value: detail.value }));
  return checkRefusal(where, error.code, { code: status.code, details });
}

const lobby = new spades.LobbyService(address, grpc.credentials.createInsecure());
const play = new spades.PlayService(address, grpc.credentials.createInsecure());
function unary(client, method, request, metadata) {
  return new Promise((resolve, reject) => {
    client[method](request, metadata || new grpc.Metadata(), (error, response) => (error ? reject(error) : resolve(response)));
  });
}
function seatToken(token) {
  const metadata = new grpc.Metadata();
  metadata.set('spades-seat-token', token);
  return metadata;
}
// A server stream's end: its status code and what it sent.
function ended(call, onMessage) {
  return new Promise((resolve) => {
    call.on('data', (message) => {
      seen.messages += 1;
      if (onMessage) onMessage(message);
    });
    call.on('error', (error) => resolve(error));
    call.on('status', (status) => {
      if (status.code === grpc.status.OK) resolve(null);
    });
  });
}

async function expectRefused(where, promise, code, reason) {
  try {
    await promise;
    problem(`${where}: accepted`);
  } catch (error) {
    const info = callRefusal(where, error);
    if (error.code !== code) problem(`${where}: ${statusName[error.code]}, not ${statusName[code]}`);
    if (info && reason && info.reason !== reason) problem(`${where}: ${info.reason}, not ${reason}`);
    if ((error.details || '').length > 200) problem(`${where}: a message of ${error.details.length} characters`);
  }
}

const SUITS = ['SUIT_CLUBS', 'SUIT_DIAMONDS', 'SUIT_HEARTS', 'SUIT_SPADES'];
const RANKS = ['RANK_TWO', 'RANK_FIVE', 'RANK_NINE', 'RANK_QUEEN', 'RANK_ACE'];
let lastId = 0;
const newId = (prefix) => `${prefix}${(lastId += 1)}`;

// A wrong answer to prompt p, or null: the refusal is checked when its result comes.
function wrongAnswer(p) {
  const legal = p.legal_actions[0] || { concession: {} };
  const cards = p.legal_actions.filter((a) => a.play_card).map((a) => `${a.play_card.suit}/${a.play_card.rank}`);
  switch (Math.floor(random() * 12)) {
    case 0: return { sequence: p.sequence - 1, action: legal };
    case 1: return { sequence: p.sequence + 5, action: legal };
    case 2: return { sequence: p.sequence, action: { bid: { kind: 'KIND_TRICKS', tricks: 1000000 } } };
    case 3: return p.card_pass ? { sequence: p.sequence, action: { card_pass: { cards: [p.card_pass.cards[0]] } } } : null;
    case 4: return { sequence: p.sequence, action: {} };
    case 5: case 6: {
      if (!cards.length) return null;
      const card = { suit: pick(SUITS), rank: pick(RANKS) };
      return cards.includes(`${card.suit}/${card.rank}`) ? null : { sequence: p.sequence, action: { play_card: card } };
    }
    default: return null;
  }
}

async function oneMatch(number) {
  const rules = { max_hands: 1, target_score: 100, blind_nil: true, blind_nil_deficit: 0, blind_nil_pass_cards: 2 };
  const { table } = await unary(lobby, 'CreateTable', { name: `node ${number}`, rules });
  const tokens = [];
  for (let seat = 0; seat < 4; seat += 1) {
    tokens.push((await unary(lobby, 'JoinTable', { table_id: table.table_id, player_name: `node${seat}` })).seat_token);
  }
  const watchKinds = [];
  const watching = ended(play.Watch({ table_id: table.table_id, after_sequence: 0 }), (message) => {
    if (message.kind === 'event') watchKinds.push(message.event.kind);
  });
  const calls = tokens.map((token) => play.Play(seatToken(token)));
  const seats = calls.map(async (call, seat) => {
    let last = 0;
    const kinds = [];
    const error = await new Promise((resolve) => {
      ended(call, (message) => {
        if (message.kind === 'event') {
          last = message.event.sequence;
          kinds.push(message.event.kind);
        } else if (message.kind === 'snapshot') {
          last = message.snapshot.sequence;
        } else if (message.kind === 'action_result' && !message.action_result.accepted) {
          const result = message.action_result;
          checkRefusal(`seat ${seat} action ${result.action_id}`, result.code, result.status);
        } else if (message.kind === 'prompt') {
          const p = message.prompt;
          if (p.sequence !== last) problem(`seat ${seat}: a prompt answers ${p.sequence}, the last event was ${last}`);
          const wrong = wrongAnswer(p);
          if (wrong) call.write({ action: { action_id: newId('wrong'), ...wrong } });
          if (p.legal_actions.length && random() < 0.1) {
            // Another seat answers this seat's prompt: not its turn.
            calls[(seat + 1) % 4].write({ action: { action_id: newId('other'), sequence: p.sequence, action: p.legal_actions[0] } });
          }
          const action = p.card_pass
            ? { card_pass: { cards: p.card_pass.cards.slice(0, p.card_pass.count) } }
            : pick(p.legal_actions);
          call.write({ action: { action_id: newId('a'), sequence: p.sequence, action } });
        }
      }).then(resolve);
      call.write({ start: { after_sequence: 0 } });
      call.write({}); // neither start nor action: refused by name, and the stream goes on
    });
    return { who: `seat ${seat}`, error, kinds };
  });
  const ends = [...(await Promise.all(seats)), { who: 'watch', error: await watching, kinds: watchKinds }];
  for (const end of ends) {
    const code = end.error ? end.error.code : grpc.status.OK;
    seen.endings.add(statusName[code]);
    if (code !== grpc.status.OK) problem(`${end.who}: the stream ended ${statusName[code]} (${end.error.details})`);
    const lastKind = end.kinds[end.kinds.length - 1];
    if (lastKind !== 'seed_revealed') problem(`${end.who}: the last event was ${lastKind}`);
  }
  // After the match: GetView, a stream on the finished table, and refusals of calls.
  const view = await unary(play, 'GetView', { table_id: table.table_id }, seatToken(tokens[0]));
  if (view.snapshot.view.phase !== 'PHASE_ENDED') problem(`GetView at the end: ${view.snapshot.view.phase}`);
  const lateKinds = [];
  const late = await ended(play.Watch({ table_id: table.table_id, latest: true }), (message) => lateKinds.push(message.kind));
  if (late || lateKinds.join() !== 'snapshot') problem(`a Watch of a finished table: ${late && late.code} ${lateKinds}`);
  await expectRefused('an over-long id', unary(lobby, 'GetTable', { table_id: 'x'.repeat(30000) }), grpc.status.INVALID_ARGUMENT, 'FIELD_TOO_LONG');
  await expectRefused('an unknown table', unary(play, 'GetView', { table_id: 'no-such-table' }), grpc.status.NOT_FOUND, 'TABLE_NOT_FOUND');
  await expectRefused('a forged token', unary(play, 'GetView', { table_id: table.table_id }, seatToken('forged')), grpc.status.UNAUTHENTICATED);
  await expectRefused('a late join', unary(lobby, 'JoinTable', { table_id: table.table_id, player_name: 'late' }), grpc.status.FAILED_PRECONDITION);
  seen.matches += 1;
}

// A newer Play stream of the same seat token replaces the open one: ABORTED, STREAM_REPLACED.
async function replaced() {
  const { table } = await unary(lobby, 'CreateTable', { name: 'node replaced', rules: { max_hands: 1 } });
  const { seat_token: token } = await unary(lobby, 'JoinTable', { table_id: table.table_id, player_name: 'one' });
  const first = play.Play(seatToken(token));
  const firstEnd = ended(first);
  first.write({ start: { latest: true } });
  await new Promise((resolve) => { first.once('data', resolve); }); // its snapshot: it is open
  const second = play.Play(seatToken(token));
  const secondEnd = ended(second);
  second.write({ start: { latest: true } });
  const error = await firstEnd;
  if (!error) return problem('the replaced stream ended with OK');
  const info = callRefusal('the replaced stream', error);
  seen.endings.add(`${statusName[error.code]} ${info && info.reason}`);
  if (error.code !== grpc.status.ABORTED || !info || info.reason !== 'STREAM_REPLACED') {
    problem(`the replaced stream: ${statusName[error.code]} ${info && info.reason}`);
  }
  second.cancel();
  await secondEnd;
  return null;
}

(async () => {
  await replaced();
  for (let number = 0; number < Number(matchesArg || 1); number += 1) await oneMatch(number);
  console.log(JSON.stringify({
    problems: problems.length,
    matches: seen.matches,
    messages: seen.messages,
    refusals: seen.refusals,
    reasons: [...seen.reasons].sort(),
    endings: [...seen.endings].sort(),
  }));
  process.exit(problems.length ? 1 : 0);
})().catch((error) => {
  console.log(`PROBLEM the client failed: ${error.stack || error}`);
  process.exit(2);
});
