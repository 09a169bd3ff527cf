"""Embedders: the two local models for real, the OpenAI-compatible one against a scripted server."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from support.minilm import minilm_dir
from support.scripted_openai import RecordedRequest, Reply, ScriptedOpenAI, free_port

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.providers import build_embedder
from cortadel_server.providers._http import RetryPolicy
from cortadel_server.providers.embedding import Embedder, OnnxEmbedder, OpenAIEmbedder, WordLlamaEmbedder

MINILM = minilm_dir()
FAST = RetryPolicy(base_delay=0.01)

COFFEE = ["I love coffee", "Coffee is my favourite drink", "The train leaves at noon"]


@pytest.fixture(scope="module")
def wordllama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WordLlamaEmbedder]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield WordLlamaEmbedder()


@pytest.fixture(scope="module")
def minilm() -> OnnxEmbedder:
    return OnnxEmbedder(MINILM)


@pytest.fixture(params=["wordllama", "minilm"])
def local(request: pytest.FixtureRequest) -> Embedder:
    embedder: Embedder = request.getfixturevalue(request.param)
    return embedder


def test_local_embedders_give_unit_float32_rows_of_their_dimension(local: Embedder) -> None:
    vectors = local.embed(COFFEE)
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, local.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_local_embedders_rank_by_meaning(local: Embedder) -> None:
    love, drink, train = local.embed(COFFEE)
    assert love @ drink > love @ train + 0.2


def test_local_embedders_are_deterministic_and_batch_independent(local: Embedder) -> None:
    texts = [*COFFEE, "Ann moved to Berlin in March and now works for a small robotics startup there."]
    together = local.embed(texts)
    assert np.array_equal(together, local.embed(texts))
    one_by_one = np.vstack([local.embed([t]) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


def test_blank_texts_get_zero_rows_and_empty_input_an_empty_matrix(local: Embedder) -> None:
    vectors = local.embed(["I love coffee", "", "   "])
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, rel=1e-5)
    assert not vectors[1:].any()
    assert local.embed([]).shape == (0, local.dim)


def test_wordllama_is_the_default_256d_l2_supercat(wordllama: WordLlamaEmbedder) -> None:
    assert (wordllama.provider, wordllama.model, wordllama.dim) == ("wordllama", "l2_supercat", 256)


def test_wordllama_stages_its_tokenizer_in_the_cache_and_never_downloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import requests
    import wordllama

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("wordllama tried to download")

    monkeypatch.setattr(requests, "get", no_network)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    embedder = WordLlamaEmbedder()
    staged = tmp_path / "cortadel" / "wordllama" / "tokenizers" / "l2_supercat_tokenizer_config.json"
    bundled = Path(wordllama.__file__).parent / "tokenizers" / staged.name
    assert staged.read_bytes() == bundled.read_bytes()
    assert embedder.embed(["hello"]).shape == (1, 256)


def test_wordllama_truncates_matryoshka_style(wordllama: WordLlamaEmbedder) -> None:
    short = WordLlamaEmbedder(dim=64).embed(COFFEE)
    head = wordllama.embed(COFFEE)[:, :64]
    assert short.shape == (3, 64)
    np.testing.assert_allclose(short, head / np.linalg.norm(head, axis=1, keepdims=True), atol=1e-6)
    with pytest.raises(ProviderError, match="512 dimensions asked"):
        WordLlamaEmbedder(dim=512)


def test_wordllama_reads_the_first_2048_tokens_of_a_long_text(wordllama: WordLlamaEmbedder) -> None:
    coffee, cut, whole_mix = wordllama.embed(["coffee " * 100, "coffee " * 3000 + "train " * 3000, "coffee " * 100 + "train " * 100])
    assert coffee @ cut == pytest.approx(1.0, abs=1e-5)
    assert coffee @ whole_mix < 0.9


def test_wordllama_refuses_models_it_would_have_to_download() -> None:
    with pytest.raises(ProviderError, match="only the bundled 'l2_supercat' works offline"):
        WordLlamaEmbedder("l3_supercat")


def test_onnx_embedder_reads_minilm(minilm: OnnxEmbedder) -> None:
    assert (minilm.provider, minilm.dim) == ("onnx", 384)
    assert minilm.model == "all-MiniLM-L6-v2-int8"


def test_onnx_embedder_truncates_at_256_tokens(minilm: OnnxEmbedder) -> None:
    # "word" is one token; [CLS] + 254 words + [SEP] fill the 256-token window.
    longer, exact, shorter = minilm.embed(["word " * 1000, "word " * 254, "word " * 200])
    np.testing.assert_allclose(longer, exact, atol=1e-6)
    assert longer @ shorter < 0.999


def test_onnx_embedder_names_what_a_model_directory_lacks(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match=r"model\.onnx not found"):
        OnnxEmbedder(tmp_path)


# -- openai-compatible -------------------------------------------------------------------------


def echo_vectors(request: RecordedRequest) -> Reply:
    """[len(text), 1, 0, 2] for each input: predictable, distinct, unnormalised."""
    return Reply.embeddings([[float(len(text)), 1.0, 0.0, 2.0] for text in request.body["input"]])


@pytest.fixture
def api() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


def test_openai_embedder_probes_its_dimension_and_sends_model_and_key(api: ScriptedOpenAI) -> None:
    api.handle("/v1/embeddings", echo_vectors)
    embedder = OpenAIEmbedder(api.v1_url, model="nomic-embed-text", api_key="sk-test", policy=FAST)
    try:
        assert (embedder.provider, embedder.model, embedder.dim) == ("openai", "nomic-embed-text", 4)
        probe = api.requests[0]
        assert (probe.method, probe.path) == ("POST", "/v1/embeddings")
        assert probe.body == {"input": ["dimension probe"], "model": "nomic-embed-text"}
        assert probe.headers["authorization"] == "Bearer sk-test"

        vectors = embedder.embed(["abc", "", "hello"])
        assert api.requests[-1].body["input"] == ["abc", "hello"]  # blank texts are not sent
        assert vectors.dtype == np.float32
        np.testing.assert_allclose(vectors[0], np.array([3, 1, 0, 2]) / np.sqrt(14), rtol=1e-6)
        assert not vectors[1].any()
        np.testing.assert_allclose(vectors[2], np.array([5, 1, 0, 2]) / np.sqrt(30), rtol=1e-6)
    finally:
        embedder.close()


def test_openai_embedder_restores_the_order_of_shuffled_replies(api: ScriptedOpenAI) -> None:
    api.enqueue("/v1/embeddings", Reply.embeddings([[1.0, 0.0]]))
    api.enqueue("/v1/embeddings", Reply(body={"data": [{"index": 1, "embedding": [0.0, 2.0]}, {"index": 0, "embedding": [3.0, 0.0]}]}))
    embedder = OpenAIEmbedder(api.v1_url, policy=FAST)
    try:
        assert embedder.embed(["first", "second"]).tolist() == [[1.0, 0.0], [0.0, 1.0]]
        assert "model" not in api.requests[0].body
    finally:
        embedder.close()


def test_openai_embedder_sends_batches_of_128(api: ScriptedOpenAI) -> None:
    api.handle("/v1/embeddings", echo_vectors)
    embedder = OpenAIEmbedder(api.v1_url, policy=FAST)
    try:
        texts = [f"text number {i}" for i in range(300)]
        vectors = embedder.embed(texts)
        assert [len(r.body["input"]) for r in api.requests[1:]] == [128, 128, 44]
        assert vectors.shape == (300, 4)
        np.testing.assert_allclose(vectors[299], embedder.embed(["text number 299"])[0])
    finally:
        embedder.close()


def test_openai_embedder_asks_for_dimensions_and_cuts_longer_answers(api: ScriptedOpenAI) -> None:
    api.handle("/v1/embeddings", lambda r: Reply.embeddings([[3.0, 4.0, 9.0, 9.0] for _ in r.body["input"]]))
    embedder = OpenAIEmbedder(api.v1_url, model="text-embedding-3-small", dim=2, policy=FAST)
    try:
        assert embedder.dim == 2
        assert embedder.embed(["x"]).tolist() == [[pytest.approx(0.6), pytest.approx(0.8)]]
        assert {r.body["dimensions"] for r in api.requests} == {2}
    finally:
        embedder.close()


def test_openai_embedder_fails_at_start_when_the_model_is_too_small(api: ScriptedOpenAI) -> None:
    api.handle("/v1/embeddings", echo_vectors)
    with pytest.raises(ProviderError, match=r"asked for 8 dimensions, .* returned 4"):
        OpenAIEmbedder(api.v1_url, dim=8, policy=FAST)


def test_openai_embedder_retries_429_honouring_retry_after(api: ScriptedOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    api.handle("/v1/embeddings", echo_vectors)
    embedder = OpenAIEmbedder(api.v1_url, policy=FAST)
    try:
        api.enqueue("/v1/embeddings", Reply.error(429, "slow down", retry_after=0.3))
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="cortadel.providers"):
            vectors = embedder.embed(["abc"])
        assert time.monotonic() - started >= 0.3
        (warning,) = caplog.records
        assert warning.getMessage() == (
            f"openai embedder: {api.v1_url}/embeddings answered HTTP 429: "
            '{"error": {"message": "slow down", "type": "scripted"}}; try 2 of 3 in 0.30s'
        )
        assert len(api.requests) == 3  # probe, 429, retry
        np.testing.assert_allclose(vectors[0], np.array([3, 1, 0, 2]) / np.sqrt(14), rtol=1e-6)
    finally:
        embedder.close()


def test_openai_embedder_gives_up_after_three_5xx(api: ScriptedOpenAI) -> None:
    api.enqueue("/v1/embeddings", *[Reply.error(500, "model crashed")] * 3)
    with pytest.raises(ProviderError, match=r"HTTP 500: .*model crashed.*gave up after 3 tries"):
        OpenAIEmbedder(api.v1_url, policy=FAST)
    assert len(api.requests) == 3


def test_openai_embedder_does_not_retry_a_client_error(api: ScriptedOpenAI) -> None:
    api.enqueue("/v1/embeddings", Reply.error(401, "bad key"))
    with pytest.raises(ProviderError, match=r"HTTP 401: .*bad key"):
        OpenAIEmbedder(api.v1_url, policy=FAST)
    assert len(api.requests) == 1


def test_openai_embedder_times_out_without_retrying(api: ScriptedOpenAI) -> None:
    api.enqueue("/v1/embeddings", Reply(body={"data": []}, delay=2.0))
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"no answer from .* within 0\.2s"):
        OpenAIEmbedder(api.v1_url, timeout=0.2, policy=FAST)
    assert time.monotonic() - started < 1.5
    assert len(api.requests) == 1


def test_openai_embedder_reports_an_unreachable_server() -> None:
    with pytest.raises(ProviderError, match=r"cannot reach http://127\.0\.0\.1:.*gave up after 3 tries"):
        OpenAIEmbedder(f"http://127.0.0.1:{free_port()}/v1", policy=FAST)


def test_build_embedder_follows_the_settings(api: ScriptedOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    default = build_embedder(Settings())
    assert isinstance(default, WordLlamaEmbedder) and isinstance(default, Embedder)
    assert build_embedder(Settings(embedder_dim=128)).dim == 128

    onnx = build_embedder(Settings(embedder="onnx", embedder_model=str(MINILM)))
    assert (onnx.provider, onnx.dim) == ("onnx", 384)

    api.handle("/v1/embeddings", echo_vectors)
    remote = build_embedder(Settings(embedder="openai", embedder_url=api.v1_url + "/", embedder_model="m", embedder_api_key="k"))
    assert isinstance(remote, OpenAIEmbedder)
    try:
        assert (remote.model, remote.dim) == ("m", 4)
        assert api.requests[0].headers["authorization"] == "Bearer k"
        assert api.requests[0].path == "/v1/embeddings"
    finally:
        remote.close()
