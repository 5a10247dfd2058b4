// A complete agent for `skill-evolve run`, in plain Node.js (no package needed).
//
// It speaks the agent protocol (docs/agent-protocol.md): one JSON object per
// line on stdin and stdout. For each question it looks through the skill
// documents of the workspace for a line `RULE <task type> => <answer>`,
// reports the lookup as one trace step, and answers with the rule's answer
// (or `unknown`). It serves questions until stdin closes, so it works both as
// a long-lived worker (`mode = "worker"`) and once per question.
//
// Replace `answer()` with your own agent: keep stdout for protocol lines and
// write logs to stderr.

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

// The answer the skills give for `taskType`, and the file it came from.
function ruleAnswer(skillsDir, taskType) {
  const prefix = `RULE ${taskType} =>`;
  let names = [];
  try {
    names = readdirSync(skillsDir).sort();
  } catch {
    names = [];
  }
  for (const name of names) {
    let text;
    try {
      text = readFileSync(join(skillsDir, name), "utf8");
    } catch {
      continue;
    }
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (line.startsWith(prefix)) {
        return [line.slice(prefix.length).trim(), name];
      }
    }
  }
  return ["unknown", ""];
}

// The protocol lines (steps, then the result) that answer one request.
function answer(request) {
  const question = request.question ?? {};
  const qid = question.question_id ?? "";
  const taskType = question.task_type ?? "";
  const skillsDir = request.workspace?.skills_dir ?? "";
  const [prediction, source] = ruleAnswer(skillsDir, taskType);
  return [
    {
      type: "step",
      question_id: qid,
      tool_name: "read_skill",
      tool_input: { file: source },
      tool_output: prediction,
      thought: `looking for a rule about ${taskType}`,
    },
    {
      type: "result",
      question_id: qid,
      prediction,
      answer_confidence: 0.9,
      max_steps: 5,
    },
  ];
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    process.stderr.write("rule-agent.mjs: unreadable request\n");
    process.exit(2);
  }
  for (const message of answer(request)) {
    process.stdout.write(JSON.stringify(message) + "\n");
  }
}
