package scripted

import (
	"fmt"
	"net/http"
)

// created is the fixed creation time the responses carry (Unix seconds), so
// that a replay is byte-identical.
const created = 1767225600

// writeAnthropic answers in the Messages API shape: a message object, or the
// event sequence message_start, ping, (content_block_start,
// content_block_delta…, content_block_stop)…, message_delta, message_stop.
func writeAnthropic(w http.ResponseWriter, t *Turn, r Reply, n, inTok int, out reasoningOut) {
	id := fmt.Sprintf("msg_scripted_%06d", n)
	stop := "end_turn"
	var content []map[string]any
	if len(r.Calls) > 0 {
		stop = "tool_use"
		for i, c := range r.Calls {
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_scripted_%06d_%d", n, i), "name": c.Name, "input": rawJSON(args(c))})
		}
	} else {
		content = []map[string]any{{"type": "text", "text": r.Text}}
	}
	calls := 0 // index of the first tool_use in content
	switch {
	case out.redacted:
		content = append([]map[string]any{{"type": "redacted_thinking", "data": out.sig}}, content...)
		calls = 1
	case out.text != "":
		content = append([]map[string]any{{"type": "thinking", "thinking": out.text, "signature": out.sig}}, content...)
		calls = 1
	}
	outTok := 1 + len(marshal(content))/4
	usage := map[string]any{"input_tokens": inTok, "output_tokens": outTok, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if !t.Stream {
		msg := map[string]any{"id": id, "type": "message", "role": "assistant", "model": t.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
		if out.transformations != nil {
			msg["input_transformations"] = out.transformations
		}
		writeJSON(w, msg)
		return
	}
	e := newSSE(w)
	start := map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": t.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": inTok, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
	if out.transformations != nil {
		start["input_transformations"] = out.transformations
	}
	e.event("message_start", map[string]any{"type": "message_start", "message": start})
	e.event("ping", map[string]any{"type": "ping"})
	for i, c := range content {
		switch c["type"] {
		case "redacted_thinking":
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": c})
		case "thinking":
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			for _, p := range chunks(out.text, 64) {
				e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": p}})
			}
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "signature_delta", "signature": out.sig}})
		case "text":
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, p := range chunks(r.Text, 64) {
				e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": p}})
			}
		default:
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			for _, p := range chunks(args(r.Calls[i-calls]), 48) {
				e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
			}
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": outTok}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

// writeChat answers in the Chat Completions shape: a chat.completion, or
// chat.completion.chunk events ending with "data: [DONE]" (and a usage
// chunk when stream_options.include_usage is set; it is always sent, as
// clients ignore it otherwise).
func writeChat(w http.ResponseWriter, t *Turn, r Reply, n, inTok int, out reasoningOut) {
	id := fmt.Sprintf("chatcmpl-scripted-%06d", n)
	finish := "stop"
	var calls []map[string]any
	for i, c := range r.Calls {
		calls = append(calls, map[string]any{"index": i, "id": fmt.Sprintf("call_scripted_%06d_%d", n, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": args(c)}})
	}
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	outTok := 1 + (len(r.Text)+len(marshal(calls)))/4
	usage := map[string]any{"prompt_tokens": inTok, "completion_tokens": outTok, "total_tokens": inTok + outTok}
	if !t.Stream {
		msg := map[string]any{"role": "assistant", "content": r.Text}
		if out.text != "" {
			msg["reasoning_content"] = out.text
		}
		if len(calls) > 0 {
			for _, c := range calls {
				delete(c, "index")
			}
			msg["content"] = nil
			msg["tool_calls"] = calls
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": t.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}}, "usage": usage})
		return
	}
	e := newSSE(w)
	chunk := func(delta map[string]any, fin any) {
		e.raw(marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": t.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin, "logprobs": nil}}}))
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, p := range chunks(out.text, 64) {
		chunk(map[string]any{"reasoning_content": p}, nil)
	}
	if len(calls) == 0 {
		for _, p := range chunks(r.Text, 64) {
			chunk(map[string]any{"content": p}, nil)
		}
	}
	for i, c := range calls {
		fn := c["function"].(map[string]any)
		a := fn["arguments"].(string)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c["id"], "type": "function",
			"function": map[string]any{"name": fn["name"], "arguments": ""}}}}, nil)
		for _, p := range chunks(a, 48) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	e.raw(marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": t.Model, "choices": []any{}, "usage": usage}))
	e.raw("[DONE]")
}

// writeResponses answers in the Responses API shape: a response object, or
// the events response.created, response.in_progress, per output item
// response.output_item.added … response.output_item.done (with
// content_part/output_text or function_call_arguments events between), and
// response.completed, each with a sequence_number.
func writeResponses(w http.ResponseWriter, t *Turn, r Reply, n, inTok int, out reasoningOut) {
	id := fmt.Sprintf("resp_scripted_%06d", n)
	var output []map[string]any
	if out.compaction != "" {
		output = []map[string]any{{"type": "compaction", "id": fmt.Sprintf("cmp_scripted_%06d", n), "encrypted_content": out.compaction}}
	} else if len(r.Calls) > 0 {
		for i, c := range r.Calls {
			output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_scripted_%06d_%d", n, i),
				"call_id": fmt.Sprintf("call_scripted_%06d_%d", n, i), "name": c.Name, "arguments": args(c), "status": "completed"})
		}
	} else {
		output = []map[string]any{{"type": "message", "id": fmt.Sprintf("msg_scripted_%06d", n), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}}}}
	}
	reasonTok := 0
	if out.text != "" {
		item := map[string]any{"type": "reasoning", "id": out.id, "summary": []any{map[string]any{"type": "summary_text", "text": out.text}}}
		if out.sig != "" {
			item["encrypted_content"] = out.sig
		}
		output = append([]map[string]any{item}, output...)
		reasonTok = 1 + len(out.text)/4
	}
	outTok := 1 + len(marshal(output))/4
	resp := func(status string, items []map[string]any) map[string]any {
		m := map[string]any{"id": id, "object": "response", "created_at": created, "status": status, "model": t.Model,
			"output": items, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "error": nil, "incomplete_details": nil}
		if out.transformations != nil {
			m["input_transformations"] = out.transformations
		}
		if status == "completed" {
			m["usage"] = map[string]any{"input_tokens": inTok, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": outTok, "output_tokens_details": map[string]any{"reasoning_tokens": reasonTok}, "total_tokens": inTok + outTok}
		}
		return m
	}
	if !t.Stream {
		writeJSON(w, resp("completed", output))
		return
	}
	e := newSSE(w)
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		e.event(typ, fields)
	}
	ev("response.created", map[string]any{"response": resp("in_progress", []map[string]any{})})
	ev("response.in_progress", map[string]any{"response": resp("in_progress", []map[string]any{})})
	for i, it := range output {
		itemID := it["id"]
		switch it["type"] {
		case "reasoning":
			added := map[string]any{"type": "reasoning", "id": itemID, "summary": []any{}}
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			ev("response.reasoning_summary_part.added", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0,
				"part": map[string]any{"type": "summary_text", "text": ""}})
			for _, p := range chunks(out.text, 64) {
				ev("response.reasoning_summary_text.delta", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0, "delta": p})
			}
			ev("response.reasoning_summary_text.done", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0, "text": out.text})
			ev("response.reasoning_summary_part.done", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0,
				"part": map[string]any{"type": "summary_text", "text": out.text}})
		case "compaction":
			ev("response.output_item.added", map[string]any{"output_index": i, "item": it})
		case "function_call":
			added := map[string]any{}
			for k, v := range it {
				added[k] = v
			}
			added["arguments"], added["status"] = "", "in_progress"
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			a := it["arguments"].(string)
			for _, p := range chunks(a, 48) {
				ev("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": i, "delta": p})
			}
			ev("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": i, "arguments": a})
		default:
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "message", "id": itemID,
				"status": "in_progress", "role": "assistant", "content": []any{}}})
			ev("response.content_part.added", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, p := range chunks(r.Text, 64) {
				ev("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0, "delta": p, "logprobs": []any{}})
			}
			ev("response.output_text.done", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0, "text": r.Text, "logprobs": []any{}})
			ev("response.content_part.done", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	ev("response.completed", map[string]any{"response": resp("completed", output)})
}

// rawJSON keeps already-encoded JSON as it is inside a marshalled value.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }
