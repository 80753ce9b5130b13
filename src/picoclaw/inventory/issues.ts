/** What each per-file problem found in a sessions folder means, and what to do about it. */
const ISSUES: Record<string, { text: string; todo: string }> = {
  meta_corrupt: {
    text: '.meta.json is not valid JSON',
    todo: 'PicoClaw skips it too; restore it from a backup or remove the pair by hand',
  },
  meta_empty: {
    text: '.meta.json is empty',
    todo: 'PicoClaw skips it too; remove the pair by hand if the session is not wanted',
  },
  meta_not_utf8: {
    text: '.meta.json is not UTF-8',
    todo: 'PicoClaw cannot read it either; inspect it and remove the pair by hand if not wanted',
  },
  meta_no_key: {
    text: '.meta.json has no key (PicoClaw skips it)',
    todo: 'remove the pair by hand if the session is not wanted',
  },
  meta_wrong_type: {
    text: ".meta.json has a field of the wrong type (Go's decoder rejects it: PicoClaw does not list it)",
    todo: 'PicoClaw skips it too; fix the field or remove the pair by hand',
  },
  meta_unreadable: { text: '.meta.json cannot be read', todo: 'check its permissions' },
  jsonl_missing: { text: 'no .jsonl (normal right after a turn starts)', todo: 'nothing to do' },
  jsonl_unreadable: { text: '.jsonl cannot be read', todo: 'check its permissions' },
  jsonl_truncated_last_line: {
    text: 'last .jsonl line is torn (a crash mid-append); the line before it was used',
    todo: 'nothing to do; PicoClaw skips the torn line',
  },
  jsonl_last_line_corrupt: {
    text: 'last .jsonl line is not valid JSON',
    todo: 'nothing to do; PicoClaw skips corrupt lines',
  },
  jsonl_last_line_too_long: {
    text: 'last .jsonl line is over 10 MB (PicoClaw refuses such lines)',
    todo: 'the meta timestamps were used',
  },
  jsonl_not_regular_file: {
    text: '.jsonl is a symlink, a folder, a FIFO or a device (never followed, never deleted through)',
    todo: 'replace it with the real file or remove the pair by hand',
  },
};

export function issueText(issue: string): string {
  return ISSUES[issue]?.text ?? issue;
}

export function issueTodo(issue: string): string {
  return ISSUES[issue]?.todo ?? '';
}
