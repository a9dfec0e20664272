"""The systems the turn benchmark runs side by side, each behind one small interface.

A system is set up on a fresh folder with ``n`` earlier turns already stored, then runs one turn
per call of ``turn(i)``: the user's prompt, the model asks for a tool, the tool runs, the model
answers — durable, with a fake model that answers at once. Histories are written straight into
each system's own storage (a real turn is run once, and its stored items are copied ``n`` times
with fresh ids), so 100,000 earlier turns take seconds to build, not hours of turns.

The peers are imported here only: agentsession never imports them.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any

QUESTION = "Please look up the order {i} and tell me whether it has shipped yet."
RESULT = "order {n}: shipped on 2026-11-{d:02d} by ground freight, tracking {pad}"
#: Characters of padding in each tool result (the disk figure also runs with larger results).
RESULT_PAD = 40
ANSWER = "Order {n} shipped on 2026-11-{d:02d}; it travels by ground freight, arriving soon."


def result_text(n: int) -> str:
    return RESULT.format(n=n, d=n % 28 + 1, pad="X" * RESULT_PAD)


def answer_text(n: int) -> str:
    return ANSWER.format(n=n, d=n % 28 + 1)


class System:
    """One system under test; ``whole_history``: it reads every stored item at each turn."""

    name = ""
    whole_history = False

    async def setup(self, folder: Path, n: int) -> None:
        raise NotImplementedError

    async def turn(self, i: int) -> str:
        raise NotImplementedError

    async def close(self) -> None:
        return None


# -- agentsession ------------------------------------------------------------------------------


class AgentSession(System):
    """``session.prompt()`` on SQLite with the default Config (window of 60 messages)."""

    name = "agentsession"

    def __init__(self, **config: Any) -> None:
        self.config = config

    async def setup(self, folder: Path, n: int) -> None:
        import agentsession as ags

        @ags.tool
        def lookup_order(order: int) -> str:
            """Look an order up."""
            return result_text(order)

        def reply(request: ags.Request) -> Any:
            last = request.messages[-1]
            if last.role == "user":
                number = int(str(last.content).split("order ")[1].split(" ")[0])
                return [ags.ToolCall("lookup_order", {"order": number})]
            return answer_text(int(str(last.content).split(":")[0].split(" ")[1]))

        self.ags = ags
        self.runtime = ags.Runtime(
            store=ags.SQLiteStore(folder / "agentsession.db"),
            model=ags.ScriptedModel(reply),
            project_dir=folder,
            tools=[lookup_order],
            config=ags.Config(**self.config),
        )
        session = await self.runtime.create_session()
        await session.prompt(QUESTION.format(i=0))
        if n > 1:
            await grow_agentsession(self.runtime.store, session.id, n - 1)
        self.session = await self.runtime.open_session(session.id)

    async def turn(self, i: int) -> str:
        result = await self.session.prompt(QUESTION.format(i=i))
        return result.text

    async def close(self) -> None:
        await self.runtime.close()


async def grow_agentsession(store: Any, session_id: str, turns: int) -> None:
    """Append ``turns`` copies of the session's first turn, then an epoch over the last turns.

    The copies are the first turn's conversation entries and dispatch records with fresh call
    ids. The epoch is what a real session holds after its window moved: the first turn's
    baseline, its history starting where the last 60 messages (15 turns) begin.
    """
    from dataclasses import replace

    from agentsession.log import AssistantEntry, ContextEpoch, Dispatch, ToolResultEntry

    log = await store.read(session_id)
    epoch = next(r.entry for r in log if isinstance(r.entry, ContextEpoch))
    template = [
        r.entry for r in log if r.entry.kind in ("user", "assistant", "tool_result", "dispatch")
    ]
    next_seq = log[-1].seq + 1
    batch: list[Any] = []
    first_of_turn: list[int] = []
    for t in range(turns):
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        first_of_turn.append(next_seq + len(batch))
        for entry in template:
            if isinstance(entry, AssistantEntry) and entry.tool_calls:
                calls = tuple(replace(c, id=call_id) for c in entry.tool_calls)
                entry = replace(entry, tool_calls=calls)
            elif isinstance(entry, ToolResultEntry):
                entry = replace(entry, call_id=call_id)
            elif isinstance(entry, Dispatch):
                entry = replace(entry, cache="hit")
            batch.append(entry)
        if len(batch) >= 20_000 or t == turns - 1:
            await store.append(session_id, next_seq, batch)
            next_seq += len(batch)
            batch = []
    start = first_of_turn[-15] if len(first_of_turn) >= 15 else 0
    moved = replace(epoch, epoch=epoch.epoch + 1, history_start=start, reason="window")
    await store.append(session_id, next_seq, [moved])


# -- openai-agents -----------------------------------------------------------------------------


class OpenAIAgents(System):
    """``Runner.run`` with ``SQLiteSession`` on a file; ``limit`` None loads every item."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.name = f"openai-agents limit={limit}" if limit else "openai-agents default"
        self.whole_history = limit is None

    async def setup(self, folder: Path, n: int) -> None:
        from agents import Agent, SQLiteSession, function_tool, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.memory import SessionSettings
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )

        set_tracing_disabled(True)

        @function_tool
        def lookup_order(order: int) -> str:
            """Look an order up."""
            return result_text(order)

        class Fake(Model):
            async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any):
                last = input[-1] if isinstance(input, list) else {"role": "user", "content": input}
                if last.get("role") == "user":
                    number = int(str(last["content"]).split("order ")[1].split(" ")[0])
                    out: Any = ResponseFunctionToolCall(
                        type="function_call",
                        call_id=f"call_{uuid.uuid4().hex[:12]}",
                        name="lookup_order",
                        arguments=json.dumps({"order": number}),
                        id=f"fc_{uuid.uuid4().hex[:12]}",
                        status="completed",
                    )
                else:
                    number = int(str(last["output"]).split(":")[0].split(" ")[1])
                    out = ResponseOutputMessage(
                        type="message",
                        id=f"msg_{uuid.uuid4().hex[:12]}",
                        role="assistant",
                        status="completed",
                        content=[
                            ResponseOutputText(
                                type="output_text", text=answer_text(number), annotations=[]
                            )
                        ],
                    )
                return ModelResponse(output=[out], usage=Usage(), response_id=None)

            def stream_response(self, *a: Any, **k: Any) -> Any:
                raise NotImplementedError

        from agents import Runner

        self.runner = Runner
        self.agent = Agent(
            name="assistant", instructions="You help.", model=Fake(), tools=[lookup_order]
        )
        path = folder / "openai_agents.db"
        settings = SessionSettings(limit=self.limit) if self.limit else None
        self.session = SQLiteSession("bench", path, session_settings=settings)
        await self.turn(0)
        if n > 1:
            await asyncio.to_thread(_grow_sqlite_session, path, n - 1)

    async def turn(self, i: int) -> str:
        result = await self.runner.run(self.agent, QUESTION.format(i=i), session=self.session)
        return str(result.final_output)

    async def close(self) -> None:
        self.session.close()


def _grow_sqlite_session(path: Path, turns: int) -> None:
    """Copy the stored items of the first turn ``turns`` times (fresh ids), in one transaction."""
    conn = sqlite3.connect(path)
    rows = [r[0] for r in conn.execute("SELECT message_data FROM agent_messages ORDER BY id")]
    items = [json.loads(r) for r in rows]
    out = []
    for _ in range(turns):
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        for item in items:
            copy = dict(item)
            if "call_id" in copy:
                copy["call_id"] = call_id
            if "id" in copy:
                copy["id"] = f"{copy['id'][:3]}{uuid.uuid4().hex[:12]}"
            out.append(("bench", json.dumps(copy)))
    with conn:
        conn.executemany("INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)", out)
    conn.close()


# -- LangGraph ---------------------------------------------------------------------------------


class LangGraph(System):
    """``create_react_agent`` with ``SqliteSaver`` on a file."""

    name = "langgraph"
    whole_history = True

    async def setup(self, folder: Path, n: int) -> None:
        import warnings

        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.tools import tool
        from langgraph.checkpoint.sqlite import SqliteSaver

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langgraph.prebuilt import create_react_agent

        @tool
        def lookup_order(order: int) -> str:
            """Look an order up."""
            return result_text(order)

        class Fake(BaseChatModel):
            @property
            def _llm_type(self) -> str:
                return "fake"

            def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
                return self

            def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
                last = messages[-1]
                if isinstance(last, HumanMessage):
                    number = int(str(last.content).split("order ")[1].split(" ")[0])
                    message = AIMessage(
                        content="",
                        tool_calls=[
                            {
                                "name": "lookup_order",
                                "args": {"order": number},
                                "id": f"call_{uuid.uuid4().hex[:12]}",
                            }
                        ],
                    )
                else:
                    number = int(str(last.content).split(":")[0].split(" ")[1])
                    message = AIMessage(content=answer_text(number))
                return ChatResult(generations=[ChatGeneration(message=message)])

        self.conn = sqlite3.connect(folder / "langgraph.db", check_same_thread=False)
        saver = SqliteSaver(self.conn)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.graph = create_react_agent(Fake(), [lookup_order], checkpointer=saver)
        self.config = {"configurable": {"thread_id": "bench"}}
        self.human = HumanMessage
        await self.turn(0)
        if n > 1:
            state = self.graph.get_state(self.config).values["messages"]
            grown: list[Any] = []
            for _ in range(n - 1):
                call_id = f"call_{uuid.uuid4().hex[:12]}"
                for m in state:
                    fresh = m.model_copy(update={"id": str(uuid.uuid4())})
                    if isinstance(m, AIMessage) and m.tool_calls:
                        fresh.tool_calls = [{**c, "id": call_id} for c in m.tool_calls]
                    if isinstance(m, ToolMessage):
                        fresh.tool_call_id = call_id
                    grown.append(fresh)
            self.graph.update_state(self.config, {"messages": grown})

    async def turn(self, i: int) -> str:
        out = self.graph.invoke({"messages": [self.human(QUESTION.format(i=i))]}, self.config)
        return str(out["messages"][-1].content)

    async def close(self) -> None:
        self.conn.close()


# -- pydantic-ai -------------------------------------------------------------------------------


class PydanticAI(System):
    """``Agent`` with a ``FunctionModel``; the history is a JSON file, rewritten and fsynced."""

    name = "pydantic-ai"
    whole_history = True

    async def setup(self, folder: Path, n: int) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.messages import (
            ModelMessagesTypeAdapter,
            ModelRequest,
            ModelResponse,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
            UserPromptPart,
        )
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            part = messages[-1].parts[-1]
            if isinstance(part, UserPromptPart):
                number = int(str(part.content).split("order ")[1].split(" ")[0])
                return ModelResponse(
                    parts=[
                        ToolCallPart(
                            "lookup_order", {"order": number}, f"call_{uuid.uuid4().hex[:12]}"
                        )
                    ]
                )
            assert isinstance(part, ToolReturnPart)
            number = int(str(part.content).split(":")[0].split(" ")[1])
            return ModelResponse(parts=[TextPart(answer_text(number))])

        self.agent = Agent(FunctionModel(model), instructions="You help.")

        @self.agent.tool_plain
        def lookup_order(order: int) -> str:
            """Look an order up."""
            return result_text(order)

        self.adapter = ModelMessagesTypeAdapter
        self.path = folder / "pydantic_ai.json"
        self.path.write_bytes(b"[]")
        await self.turn(0)
        if n > 1:
            first = json.loads(self.path.read_bytes())
            grown = []
            for _ in range(n):
                call_id = f"call_{uuid.uuid4().hex[:12]}"
                for message in first:
                    copy = json.loads(json.dumps(message))
                    for part in copy["parts"]:
                        if "tool_call_id" in part:
                            part["tool_call_id"] = call_id
                    grown.append(copy)
            _write_durably(self.path, json.dumps(grown).encode())
        _ = (ModelRequest,)

    async def turn(self, i: int) -> str:
        history = self.adapter.validate_json(self.path.read_bytes())
        result = await self.agent.run(QUESTION.format(i=i), message_history=history)
        _write_durably(self.path, result.all_messages_json())
        return str(result.output)


def _write_durably(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new file."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def all_systems() -> list[System]:
    return [
        AgentSession(),
        OpenAIAgents(60),
        OpenAIAgents(None),
        LangGraph(),
        PydanticAI(),
    ]
