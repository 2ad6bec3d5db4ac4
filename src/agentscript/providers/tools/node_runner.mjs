// One node:/npm: tool call for AgentScript (providers/tools/node.py). Run as
// `node --input-type=module -e <this file>` in the workspace folder.
// Reads {specifier, package, method, args, read, label} as JSON on stdin and writes one JSON
// line on stdout: {ok: true, value} or {ok: false, error}; then exits, so a timer or a socket
// the module left open cannot keep the call waiting. Whatever the module prints goes to
// stderr, so stdout holds the answer alone. No stack trace ever leaves: only messages.

import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const stdout = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);

function finish(message) {
  stdout(JSON.stringify(message) + "\n", () => process.exit(0));
}

function unsafe(value, at, seen) {
  if (value === null || typeof value === "string" || typeof value === "boolean") return null;
  if (typeof value === "number") {
    return Number.isFinite(value) ? null : `${at}: a non-finite number is not JSON-safe`;
  }
  if (value === undefined) return `${at}: undefined is not JSON-safe`;
  if (typeof value !== "object") return `${at}: ${typeof value} is not JSON-safe`;
  if (seen.has(value)) return `${at}: a circular reference is not JSON-safe`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        const problem = unsafe(value[index], `${at}[${index}]`, seen);
        if (problem) return problem;
      }
      return null;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      return `${at}: class instance is not JSON-safe`;
    }
    for (const key of Object.keys(value)) {
      const problem = unsafe(value[key], `${at}.${key}`, seen);
      if (problem) return problem;
    }
    return null;
  } finally {
    seen.delete(value);
  }
}

// A package resolves as the original resolves it: from the workspace's package.json, through
// its node_modules (CommonJS and ESM packages alike); a built-in is imported by its node: name.
async function load(job) {
  if (job.package === null) return import(job.specifier);
  try {
    const resolved = createRequire(join(process.cwd(), "package.json")).resolve(job.specifier);
    return await import(pathToFileURL(resolved).href);
  } catch (error) {
    throw new Error(
      `Failed to load npm package '${job.specifier}': ${error && error.message}. Possible ` +
        "causes: package is not installed or workspace root is incorrect.",
    );
  }
}

// The member a call names: the module's own, else its default export's (CommonJS interop).
function member(module, method, label) {
  if (method in module) return [module, module[method]];
  const fallback = module.default;
  if (fallback !== null && (typeof fallback === "object" || typeof fallback === "function")) {
    if (method in fallback) return [fallback, fallback[method]];
  }
  throw new Error(`Unknown method '${label}'`);
}

async function call(job) {
  const [owner, target] = member(await load(job), job.method, job.label);
  if (typeof target === "function") {
    if (job.read) throw new Error(`'${job.label}' is a function and cannot be read as a property`);
    return target.apply(owner, job.args);
  }
  if (job.args.length > 0) throw new Error(`'${job.label}' is not a function`);
  return target;
}

try {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const job = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  let value = await call(job);
  if (value === undefined) value = null;
  const problem = unsafe(value, "result", new Set());
  finish(problem ? { ok: false, invalid: problem } : { ok: true, value });
} catch (error) {
  finish({ ok: false, error: String((error && error.message) || error) });
}
