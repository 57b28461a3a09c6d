// Local tools shared by the Node agents. Paths are confined to the working
// directory: the model is scripted, but an agent should not trust it anyway.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// TOOL_SPECS describes the tools as JSON Schema, shared by both SDKs.
export const TOOL_SPECS = [
  {
    name: 'write_file',
    description: 'Write a text file in the working directory.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  },
  {
    name: 'read_file',
    description: 'Read a text file from the working directory.',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'run_shell',
    description: 'Run a shell command in the working directory and return its output.',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
];

// TASK is the multi-step task of the tool loop.
export const TASK = 'Write a short poem about a jukebox to poem.txt, read it back, then count its lines.';

function inside(p) {
  const full = path.resolve(process.cwd(), String(p));
  if (full !== process.cwd() && !full.startsWith(process.cwd() + path.sep)) {
    throw new Error(`path ${p} escapes the working directory`);
  }
  return full;
}

// runTool executes one tool call and returns its result as text.
export function runTool(name, args) {
  switch (name) {
    case 'write_file':
      writeFileSync(inside(args.path), String(args.content));
      return `wrote ${Buffer.byteLength(String(args.content))} bytes to ${args.path}`;
    case 'read_file':
      return readFileSync(inside(args.path), 'utf8');
    case 'run_shell':
      return execFileSync('/bin/sh', ['-c', String(args.command)], { cwd: process.cwd(), encoding: 'utf8' }).trim();
    default:
      throw new Error(`unknown tool ${name}`);
  }
}

// main runs fn and exits non-zero on any error.
export function main(fn) {
  fn().catch((err) => {
    console.error(`agent failed: ${err?.stack ?? err}`);
    process.exit(1);
  });
}
