// Tokenises files with a TextMate grammar through vscode-textmate (VS Code's own tokenizer) and
// prints, as JSON, every stretch of text that no rule matched (only the root scope) and every
// file that ends inside a begin/end region (an unterminated string, say).
// Usage: node textmate_check.js GRAMMAR.json FILE...   (NODE_PATH holds the npm packages)
"use strict";

const fs = require("fs");
const path = require("path");
const textmate = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

async function main() {
  const [grammarPath, ...files] = process.argv.slice(2);
  const wasm = fs.readFileSync(
    path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm")
  );
  await oniguruma.loadWASM(wasm.buffer);
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async () =>
      textmate.parseRawGrammar(fs.readFileSync(grammarPath, "utf8"), grammarPath),
  });
  const grammar = await registry.loadGrammar("source.agentscript");
  const report = { files: 0, lines: 0, unmatched: [], unclosed: [] };
  for (const file of files) {
    const lines = fs.readFileSync(file, "utf8").split("\n");
    let stack = textmate.INITIAL;
    lines.forEach((line, number) => {
      const result = grammar.tokenizeLine(line, stack);
      for (const token of result.tokens) {
        const text = line.slice(token.startIndex, token.endIndex);
        if (token.scopes.length === 1 && text.trim() !== "") {
          report.unmatched.push({ file, line: number + 1, column: token.startIndex + 1, text });
        }
      }
      stack = result.ruleStack;
      report.lines += 1;
    });
    if (stack.depth > 1) {
      report.unclosed.push(file);
    }
    report.files += 1;
  }
  process.stdout.write(JSON.stringify(report));
}

main().catch((error) => {
  process.stderr.write(String(error.stack || error));
  process.exit(2);
});
