// A Spades bot in JavaScript (Node 20) for `spades-bot --bot exec:'node simple.js'`.
// It speaks the JSON-lines protocol of docs/external-bots.md: one JSON object per line.
const readline = require("node:readline");
const lines = readline.createInterface({ input: process.stdin });
const say = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const rank = (card) => "23456789TJQKA".indexOf(card[0]) + (card === "LJ" ? 13 : card === "BJ" ? 14 : 0);

lines.on("line", (line) => {
  const message = JSON.parse(line);
  if (message.type === "hello") return say({ type: "hello", version: 1, name: "simple" });
  if (message.type !== "decide") return; // "end": the match is over; stdin closes next
  const legal = message.legal;
  let choice = 0; // a pass, a Blind Nil choice (look): the first on offer
  let note; // a sealed note on the action: no one reads it before the match is over
  if (legal[0].type === "bid") {
    // Bid the aces, kings and spades above the ten; never Nil.
    const strong = message.hand.filter((card) => rank(card) >= 11 || (card[1] === "S" && rank(card) >= 8));
    const wanted = Math.max(1, Math.round(strong.length * 0.8));
    choice = Math.max(0, legal.findIndex((action) => action.tricks === wanted));
    note = `${strong.length} strong cards: ${strong.join(" ")}`;
  } else if (legal[0].type === "play") {
    choice = legal.reduce((low, action, index) => (rank(action.card) < rank(legal[low].card) ? index : low), 0);
  }
  say(note ? { id: message.id, choice, note } : { id: message.id, choice });
});
