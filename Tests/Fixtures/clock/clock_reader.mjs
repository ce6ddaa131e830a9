// Reads the wall clock the ways Node.js backends commonly do, once per line on stdin: Date.now(),
// new Date().getTime(), Math.floor(Date.now() / 1000) * 1000 + the Date's milliseconds.
import readline from "node:readline";

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", () => {
  const d = new Date();
  console.log([Date.now(), d.getTime(), Date.parse(d.toISOString())].join(" "));
});
