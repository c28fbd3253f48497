"""Chat models: ``SummarizeFn``, chat clients for OpenAI-compatible servers, Anthropic and Gemini.

Every part of the package that asks a model goes through a :data:`SummarizeFn`
(``async (messages, options) -> str``). :func:`summarize_fn` makes one of any :class:`ChatClient`;
the shipped clients (:class:`OpenAIChatClient` for OpenAI, OpenRouter, Ollama, vLLM, llama.cpp and
LM Studio, :class:`AnthropicChatClient`, :class:`GeminiChatClient`) speak their provider's API over
HTTP with timeouts and retries, raise :class:`ModelServiceError` naming the provider and the HTTP
status, and report why the model stopped (:attr:`ChatCompletion.truncated` for an answer cut at
its length limit). :func:`create_chat_client` builds one from a configuration, and
:func:`read_json_array` reads the JSON array in an answer. See ``docs/models.md``.
"""

from .anthropic import ANTHROPIC_VERSION, AnthropicChatClient
from .base import (
    DEFAULT_SUMMARY_PROMPT,
    FOLLOW_UP_MESSAGE,
    BaseChatClient,
    ChatClient,
    summarize_fn,
)
from .factory import CHAT_PROVIDERS, create_chat_client
from .gemini import GeminiChatClient, to_gemini_request
from .json_array import JsonArrayRead, continuation_prompt, read_json_array
from .openai import OPENAI_COMPATIBLE_PRESETS, OpenAIChatClient, OpenAICompatiblePreset
from .records import (
    FINISH_REASONS,
    ChatCompletion,
    FinishReason,
    ModelServiceError,
    SummarizeFn,
    SummarizeOptions,
    TokenUsage,
)

__all__ = [
    "ANTHROPIC_VERSION",
    "CHAT_PROVIDERS",
    "DEFAULT_SUMMARY_PROMPT",
    "FINISH_REASONS",
    "FOLLOW_UP_MESSAGE",
    "OPENAI_COMPATIBLE_PRESETS",
    "AnthropicChatClient",
    "BaseChatClient",
    "ChatClient",
    "ChatCompletion",
    "FinishReason",
    "GeminiChatClient",
    "JsonArrayRead",
    "ModelServiceError",
    "OpenAIChatClient",
    "OpenAICompatiblePreset",
    "SummarizeFn",
    "SummarizeOptions",
    "TokenUsage",
    "continuation_prompt",
    "create_chat_client",
    "read_json_array",
    "summarize_fn",
    "to_gemini_request",
]
