"""The routes of ATOM's API server (atom/entrypoints/openai/api_server.py)
on sim_http: /v1/models, /health, /metrics, /server_info,
/kv_transfer_info, /debug/mtp_stats, /v1/completions and
/v1/chat/completions (streamed as ATOM's SSE), /start_profile and
/stop_profile. As in ATOM, the profile routes and /debug/mtp_stats are
coroutines that call the blocking engine: while they wait, the event loop
runs nothing else and the whole server is silent.
"""
import asyncio
import json
import os
import sys
import time
import uuid

import simcommon as sc
from sim_engine import Seq, server_sizes
from sim_http import Response

log = sc.atom_logger()
DEFAULT_MAX_TOKENS = 8192     # protocol.DEFAULT_MAX_TOKENS
DEFAULT_MARKER = ("Memory access fault by GPU node-2 (Agent handle: "
                  "0x5555) on address 0x7f00. Reason: Page not present or "
                  "supervisor privilege.")


def sse(doc):
    return ("data: %s\n\n" % json.dumps(doc, separators=(",", ":"))).encode()


def invalid(kind, loc, msg, value=None):
    """FastAPI's 422 for a body that fails validation."""
    return Response(422, {"detail": [{"type": kind, "loc": ["body"] + loc,
                                      "msg": msg, "input": value}]})


class App:
    def __init__(self, args, mgr):
        self.args = args
        self.mgr = mgr
        self.model_name = args.served_model_name or args.model
        self.requests = 0               # completion requests received
        self.fatal_logged = False
        self.routes = {
            ("GET", "/v1/models"): self.models,
            ("GET", "/health"): self.health,
            ("GET", "/metrics"): self.metrics,
            ("HEAD", "/metrics"): self.metrics,
            ("GET", "/server_info"): self.server_info,
            ("GET", "/kv_transfer_info"): self.kv_transfer_info,
            ("GET", "/debug/mtp_stats"): self.mtp_stats,
            ("POST", "/v1/completions"): self.completions,
            ("POST", "/v1/chat/completions"): self.chat_completions,
            ("POST", "/start_profile"): self.start_profile,
            ("POST", "/stop_profile"): self.stop_profile,
        }

    async def __call__(self, req):
        handler = self.routes.get((req.method, req.path))
        if handler is None:
            if any(p == req.path for _, p in self.routes):
                return Response(405, {"detail": "Method Not Allowed"})
            return Response(404, {"detail": "Not Found"})
        try:
            return await handler(req)
        except Exception as e:  # noqa: BLE001 - ATOM's general handler
            log.error("Unhandled error: %s", e, exc_info=True)
            return Response(500, {"error": {
                "message": str(e), "type": "internal_server_error",
                "code": 500}})

    # ---- quick routes ----
    async def models(self, req):
        return Response(200, {"object": "list", "data": [{
            "id": self.model_name, "object": "model",
            "created": int(time.time()), "owned_by": "atom"}]})

    async def health(self, req):
        return Response(200, {"status": "ok"})

    async def metrics(self, req):
        text = "# HELP atom_requests_total Requests received.\n" \
               "# TYPE atom_requests_total counter\n" \
               "atom_requests_total %d\n" % self.requests
        return Response(200, body=text.encode(),
                        ctype="text/plain; version=0.0.4; charset=utf-8")

    async def server_info(self, req):
        tp, dp = server_sizes(self.args)
        return Response(200, {"model_id": self.model_name,
                              "served_model_name": self.model_name,
                              "tp_size": tp, "dp_size": dp})

    async def kv_transfer_info(self, req):
        tp, dp = server_sizes(self.args)
        return Response(200, {"tp_size": tp, "dp_size": dp,
                              "kv_role": None, "handshake_port": 6301})

    # ---- routes that block the event loop ----
    async def mtp_stats(self, req):
        try:
            return Response(200, self.mgr.get_mtp_statistics())
        except Exception as e:  # noqa: BLE001 - as ATOM
            log.exception("Failed to get MTP statistics")
            return Response(500, {"detail": "Failed to get MTP statistics: "
                                            "%s" % e})

    async def start_profile(self, req):
        try:
            self.mgr.start_profile()
            return Response(200, {"status": "success",
                                  "message": "Profiling started"})
        except Exception as e:  # noqa: BLE001 - as ATOM
            log.exception("Failed to start profiling")
            return Response(500, {"detail": "Failed to start profiling: %s"
                                            % e})

    async def stop_profile(self, req):
        try:
            traces = self.mgr.stop_profile()
            return Response(200, {"status": "success", "message":
                                  "Profiling stopped. Trace files "
                                  "generated.", "traces": traces})
        except Exception as e:  # noqa: BLE001 - as ATOM
            log.exception("Failed to stop profiling")
            return Response(500, {"detail": "Failed to stop profiling: %s"
                                            % e})

    # ---- completions ----
    def parse_request(self, req, text_of):
        """(prompt text, max tokens, stream) or a 4xx Response, validated
        as ATOM's CompletionRequest / ChatCompletionRequest."""
        try:
            body = req.json()
        except ValueError as e:
            return invalid("json_invalid", [0], "JSON decode error", str(e))
        if not isinstance(body, dict):
            return invalid("model_attributes_type", [],
                           "Input should be a valid dictionary", body)
        prompt = text_of(body)
        if not isinstance(prompt, str):
            return invalid("string_type", ["prompt"],
                           "Input should be a valid string", prompt)
        limit = body.get("max_completion_tokens")
        if limit is None:
            limit = body.get("max_tokens", DEFAULT_MAX_TOKENS)
        if limit is None:
            limit = DEFAULT_MAX_TOKENS
        if not isinstance(limit, int) or isinstance(limit, bool):
            return invalid("int_type", ["max_tokens"],
                           "Input should be a valid integer", limit)
        model = body.get("model")
        if model is not None and str(model).rstrip("/") != \
                self.model_name.rstrip("/"):
            return Response(400, {"detail": "Requested model '%s' does not "
                                            "match server model '%s'"
                                            % (model, self.model_name)})
        return prompt, limit, bool(body.get("stream"))

    async def completions(self, req):
        return await self.generate(req, lambda b: b.get("prompt"),
                                   TextChunks(self.model_name))

    async def chat_completions(self, req):
        def text_of(body):
            msgs = body.get("messages", body.get("prompt"))
            if isinstance(msgs, list):
                return " ".join(str(m.get("content", "")) for m in msgs
                                if isinstance(m, dict))
            return msgs
        return await self.generate(req, text_of, ChatChunks(self.model_name))

    async def generate(self, req, text_of, chunks):
        parsed = self.parse_request(req, text_of)
        if isinstance(parsed, Response):
            return parsed
        prompt, limit, stream = parsed
        self.requests += 1
        self.bench_faults(self.requests)
        n = max(1, min(limit, int(sc.env_float("SIM_MAX_TOKENS", 8))))
        loop = asyncio.get_running_loop()
        tokens = asyncio.Queue()

        def deliver(text, reason):     # from the engine's thread
            try:
                loop.call_soon_threadsafe(tokens.put_nowait, (text, reason))
            except RuntimeError:       # the loop is gone: shutting down
                seq.aborted = True
        seq = Seq(n, len(prompt.split()), deliver)
        self.mgr.add_request(seq)
        if stream:
            return Response(200, stream=self.stream(seq, tokens, chunks),
                            ctype="text/event-stream; charset=utf-8")
        return await self.whole(seq, tokens, chunks)

    async def stream(self, seq, tokens, chunks):
        """One SSE frame per token; the last token's frame, the stop frame,
        the usage frame and [DONE] in one write, as ATOM coalesces them."""
        try:
            while True:
                text, reason = await tokens.get()
                frame = sse(chunks.piece(text, reason))
                if reason is None:
                    yield frame
                    continue
                yield (frame + sse(chunks.piece("", "stop")) +
                       sse(chunks.usage(seq)) + b"data: [DONE]\n\n")
                return
        finally:
            seq.aborted = seq.emitted < seq.tokens

    async def whole(self, seq, tokens, chunks):
        t0 = time.monotonic()
        text, reason, first = "", None, None
        while reason is None:
            piece, reason = await tokens.get()
            first = first or time.monotonic() - t0
            text += piece
        return Response(200, chunks.whole(text, reason, seq, first,
                                          time.monotonic() - t0))

    def bench_faults(self, n):
        """die_during_bench=N: the server exits at completion request N
        (default 1). fatal_marker_during_bench=N: the marker is logged
        there and the engines hang (that request and every later one).
        marker_during_bench=N: the marker is logged there and the server
        goes on. fail_request=N[,M...]: those requests raise (ATOM's
        general handler logs the traceback and answers 500; the bench
        counts them failed and exits 0)."""
        if n in sc.fault_ranks("fail_request"):
            raise RuntimeError("simulated failure of completion request %d "
                               "(fail_request)" % n)
        if sc.fault_on("marker_during_bench") and \
                n == sc.fault_number("marker_during_bench", 1):
            marks = [v for v in sc.fault_values("fatal_marker") if v]
            sc.write_line(sys.stderr, marks[0] if marks else DEFAULT_MARKER)
        if sc.fault_on("die_during_bench") and \
                n >= sc.fault_number("die_during_bench", 1):
            log.error("EngineCore exited unexpectedly (request %d)", n)
            os._exit(1)
        if sc.fault_on("fatal_marker_during_bench") and \
                n >= sc.fault_number("fatal_marker_during_bench", 1) and \
                not self.fatal_logged:
            self.fatal_logged = True
            marks = [v for v in sc.fault_values("fatal_marker") if v]
            sc.write_line(sys.stderr, marks[0] if marks else DEFAULT_MARKER)
            for e in self.mgr.engines:
                e.wedged.set()


class TextChunks:
    """serving_completion's chunk shapes."""
    chunk_object = "text_completion"

    def __init__(self, model):
        self.model = model
        self.id = "cmpl-%s" % uuid.uuid4().hex

    def piece(self, text, reason):
        return {"id": self.id, "object": "text_completion",
                "created": int(time.time()), "model": self.model,
                "choices": [{"index": 0, "text": text,
                             "finish_reason": reason, "logprobs": None}]}

    def usage(self, seq):
        return {"id": self.id, "object": self.chunk_object,
                "created": int(time.time()), "model": self.model,
                "choices": [], "usage": usage(seq)}

    def whole(self, text, reason, seq, ttft, latency):
        u = usage(seq)
        u.update(ttft_s=round(ttft, 4), latency_s=round(latency, 4),
                 tpot_s=round((latency - ttft) / max(1, seq.tokens - 1), 4))
        return {"id": self.id, "object": "text_completion",
                "created": int(time.time()), "model": self.model,
                "choices": [{"index": 0, "text": text,
                             "finish_reason": reason}], "usage": u}


class ChatChunks(TextChunks):
    """serving_chat's chunk shapes."""
    chunk_object = "chat.completion.chunk"

    def piece(self, text, reason):
        return {"id": self.id, "object": self.chunk_object,
                "created": int(time.time()), "model": self.model,
                "choices": [{"index": 0, "delta": {"content": text},
                             "finish_reason": reason}]}

    def whole(self, text, reason, seq, ttft, latency):
        return {"id": self.id, "object": "chat.completion",
                "created": int(time.time()), "model": self.model,
                "choices": [{"index": 0, "message": {
                    "role": "assistant", "content": text},
                    "finish_reason": reason}], "usage": usage(seq)}


def usage(seq):
    return {"prompt_tokens": seq.prompt_tokens,
            "completion_tokens": seq.tokens,
            "total_tokens": seq.prompt_tokens + seq.tokens}
