// What the scripted model answers in each phase of the end-to-end run.

export const ASK_PROMPT = "Which files are in this workspace?";
export const ANSWER_TEXT = "The workspace has one file, **hello.txt**.";
/** Raw HTML in a model's answer must show as text, never become elements. */
/** A file reference in the answer: clicking it opens hello.txt at line 1 in the editor. */
export const FILE_LINK_TEXT = "hello.txt line 1";
export const FILE_LINK = `[${FILE_LINK_TEXT}](hello.txt#L1)`;
export const UNSAFE_HTML = '<img src="x" onerror="window.__pwned=1"><script>window.__pwned=2</script>';

/** A task list and a blockquote: checkboxes and a bordered quote in the transcript. */
export const MARKDOWN_EXTRAS = "- [x] listed the files\n- [ ] nothing else\n\n> a quoted line";

/** Phase 1: think, call list_files, then answer in markdown with a code block. */
export const toolThenAnswer = {
  turns: [
    {
      steps: [
        { thinking: "I will list the files first.", chunks: 2 },
        { tool_call: { name: "list_files", arguments: { path: "." } } },
        { usage: { prompt_tokens: 120, completion_tokens: 12 } },
        { finish: "tool_calls" },
      ],
    },
    {
      steps: [
        { text: `${ANSWER_TEXT} See ${FILE_LINK}.\n\nRead it with:\n\n\`\`\`sh\ncat hello.txt\ncat hello.txt | wc -l\n\`\`\`\n\n${MARKDOWN_EXTRAS}\n\n${UNSAFE_HTML}\n`, chunks: 6, delay: 0.05 },
        { usage: { prompt_tokens: 160, completion_tokens: 30 } },
        { finish: "stop" },
      ],
    },
  ],
};

export const SLOW_PROMPT = "Tell me a long story.";
const STORY = Array.from({ length: 300 }, (_, i) => `word${i}`).join(" ");
export const STORY_LENGTH = STORY.length;

/** Phase 2: a slow answer (300 chunks, 100 ms apart = 30 s) that the test stops. */
export const slowAnswer = {
  turns: [{ steps: [{ text: STORY, chunks: 300, delay: 0.1 }, { finish: "stop" }] }],
};

export const APPROVAL_PROMPT = "Run a command that needs approval.";
export const APPROVAL_COMMAND = "echo needs-approval";

/** Phase 3: a bash call (asks for approval under approval "ask"), then a short answer. */
export const approvalThenAnswer = {
  turns: [
    { steps: [{ tool_call: { name: "bash", arguments: { command: APPROVAL_COMMAND } } }, { finish: "tool_calls" }] },
    { steps: [{ text: "Understood, I did not run it.", chunks: 1 }, { finish: "stop" }] },
  ],
};
