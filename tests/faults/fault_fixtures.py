"""Builds replay fixtures (docs/llm.md) for the LLM fault tests: streamed OpenAI chat-completion
answers for the planner and implementer on tests/optimize/kernels/scale_rows.py, mixed with
entries that carry a replay-server fault. Each test writes its own fixture into its tmp dir, so
the fault sequence is visible next to the assertions that depend on it."""
import json

from conftest import KERNEL

SOURCE = KERNEL.read_text()


def with_block(rows, extra="", kernel_extra=""):
    """The kernel with another row block, plus optional extra code at the top of candidate()
    (it runs whenever the candidate is traced: lowering and evaluation) and at the top of the
    kernel body (it runs only when the kernel runs)."""
    code = SOURCE.replace("BLOCK_ROWS = 8\n", f"BLOCK_ROWS = {rows}\n")
    if extra:
        code = code.replace("def candidate(x, b):\n", "def candidate(x, b):\n" + extra)
    if kernel_extra:
        code = code.replace("def _kernel(x_ref, b_ref, o_ref):\n",
                            "def _kernel(x_ref, b_ref, o_ref):\n" + kernel_extra)
    return code


def stream(text, prompt_tokens=500, completion_tokens=100, ident="chatcmpl-fault"):
    base = {"id": ident, "object": "chat.completion.chunk", "created": 1764480000,
            "model": "gpt-4o-mini-2024-07-18"}
    events = [dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                   "finish_reason": None}])]
    for i in range(0, len(text), 300):
        events.append(dict(base, choices=[{"index": 0, "delta": {"content": text[i:i + 300]},
                                           "finish_reason": None}]))
    events.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    events.append(dict(base, choices=[], usage={
        "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens}))
    return [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]


def answer(purpose, text, **fault):
    entry = {"name": purpose, "match": {"purpose": purpose}, "status": 200,
             "headers": {"content-type": "text/event-stream"}, "chunks": stream(text)}
    if fault:
        entry["fault"] = fault
    return entry


def fault(purpose, **spec):
    """An entry answered by the fault alone (rate_limit, server_error, malformed, reset, hang)."""
    return {"name": f"{purpose}-{spec['type']}", "match": {"purpose": purpose}, "fault": spec}


def plan(*names):
    strategies = [{"name": n, "why": f"try {n}", "expected_effect": "fewer grid steps"}
                  for n in names]
    return "```json\n" + json.dumps({"strategies": strategies}) + "\n```"


def code(source):
    return "```python\n" + source + "```"


def write(path, entries):
    doc = {"format": "maxkernel-llm-fixture/1", "provider": "openai", "model": "gpt-4o-mini",
           "entries": entries}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path
