// One node:/npm: tool call for AgentScript (providers/tools/node.py). Run as
// `node --input-type=module -e <this file>` in the workspace folder, so a bare package name
// resolves from the workspace's node_modules as Node resolves it for the workspace's own code.
// Reads {specifier, method, args, label} as JSON on stdin, writes one JSON line on stdout:
// {ok: true, value} or {ok: false, error}. No stack trace ever leaves: only messages.

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const job = JSON.parse(Buffer.concat(chunks).toString("utf8"));

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

function answer(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

try {
  let module;
  try {
    module = await import(job.specifier);
  } catch (error) {
    throw new Error(`Failed to load '${job.specifier}': ${error && error.message}`);
  }
  let owner = module;
  let member = module[job.method];
  // A CommonJS package's exports arrive as `default`: look there when the name is not found.
  const fallback = module.default;
  const hasDefault =
    fallback !== null && (typeof fallback === "object" || typeof fallback === "function");
  if (member === undefined && hasDefault) {
    owner = fallback;
    member = fallback[job.method];
  }
  let value;
  if (typeof member === "function") {
    value = await member.apply(owner, job.args);
  } else if (member === undefined) {
    throw new Error(`Unknown method '${job.label}'`);
  } else if (job.args.length === 0) {
    value = member;
  } else {
    throw new Error(`'${job.label}' is not a function, so it takes no arguments`);
  }
  if (value === undefined) value = null;
  const problem = unsafe(value, "result", new Set());
  if (problem) {
    answer({ ok: false, error: `returned invalid value at ${problem}` });
  } else {
    answer({ ok: true, value });
  }
} catch (error) {
  answer({ ok: false, error: String((error && error.message) || error) });
}
