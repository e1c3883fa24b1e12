"""Measurement harness: bytes of tensors saved for backward by HF decoder layers.

Plain module (no pytest tests here).  It builds a tiny model of a given family
with the real ``transformers`` modelling code on CPU, runs ONE forward pass
(batch 1, one sequence, no padding) in train mode and records every tensor that
autograd saves for backward via ``torch.autograd.graph.saved_tensors_hooks``.

Counting rules
--------------
* Memory is counted per *untyped storage* (key = storage data_ptr + device),
  full ``storage.nbytes()``, each distinct storage once.  A saved view of a
  larger buffer costs the whole buffer (that is what stays alive).
* Storages that belong to parameters/buffers of the model (weights saved by
  linear/mm, RMSNorm weight, transposed weight views ...) are NOT activations;
  they are reported separately as ``param_saved_bytes``.
* Every saved storage is tagged with the *region* active when it was first
  saved: ``pre`` (embedding, rotary, mask), ``layer{i}``, ``post`` (final norm,
  lm_head), ``loss`` (only with ``include_loss=True``).  A storage saved from
  more than one region (e.g. rotary cos/sin, computed once and used by every
  layer) is moved to region ``shared``.
* With gradient checkpointing (non-reentrant) the checkpoint installs its own
  saved-tensor hooks inside each layer, so nothing inside a layer reaches our
  hook.  What a checkpointed layer keeps alive are the arguments captured by
  the checkpoint (``partial(layer.__call__, **kwargs), *args``): we count all
  tensor args/kwargs of each layer call as that layer's saved storages (with
  the same dedup/shared rule -> cos/sin and masks end up in ``shared``).
* Per-op breakdown: after the forward, the autograd graph is walked and each
  saved storage is attributed to the *earliest* (smallest sequence number)
  autograd node that saved it; keys are ``"<module path>:<grad_fn name>"``
  where the module path is the innermost submodule (relative to the decoder
  layer) active when the storage was first saved.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections import defaultdict
from typing import Any

import torch

__all__ = [
    "DEFAULT_DENSE",
    "DEFAULT_MOE",
    "build_model",
    "measure_saved_bytes",
    "measure_peak_backward",
    "dispatch_cross_check",
]

# Tiny GQA config used by default (hidden 256, 8 q heads, 2 kv heads, head_dim 32).
DEFAULT_DENSE: dict[str, Any] = dict(
    hidden_size=256,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=32,
    intermediate_size=704,
    vocab_size=1000,
    num_hidden_layers=2,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)
DEFAULT_MOE: dict[str, Any] = dict(
    DEFAULT_DENSE,
    num_experts=8,
    num_experts_per_tok=2,
    moe_intermediate_size=128,
    decoder_sparse_step=1,
    mlp_only_layers=[],
    norm_topk_prob=True,
)


def _storage_key(t: torch.Tensor):
    """(key, nbytes) of the untyped storage behind t, or None if not measurable."""
    try:
        if t.layout != torch.strided or t.device.type == "meta":
            return None
        st = t.untyped_storage()
        nbytes = st.nbytes()
        if nbytes == 0:
            return None
        return (t.device.type, st.data_ptr()), nbytes
    except Exception:  # sparse / nested / wrapper subclasses
        return None


@contextlib.contextmanager
def _default_dtype(dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def build_model(
    model_type: str,
    config_kwargs: dict,
    *,
    attn_implementation: str = "sdpa",
    experts_implementation: str | None = None,
    dtype: torch.dtype = torch.bfloat16,
    seed: int = 0,
):
    """Tiny causal-LM of family ``model_type`` built from config, params in ``dtype``, train mode."""
    from transformers import AutoConfig, AutoModelForCausalLM

    kw = dict(config_kwargs)
    kw.setdefault("use_cache", False)
    config = AutoConfig.for_model(model_type, **kw)
    config.use_cache = False
    torch.manual_seed(seed)
    extra = {}
    if experts_implementation is not None:
        extra["experts_implementation"] = experts_implementation
    with _default_dtype(dtype):
        model = AutoModelForCausalLM.from_config(config, attn_implementation=attn_implementation, dtype=dtype, **extra)
    model.to(dtype)
    model.train()
    return model


def _iter_tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _iter_tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _iter_tensors(o)


def _walk_graph(roots):
    """Yield every autograd node reachable from roots (grad_fn objects)."""
    seen = set()
    stack = [r for r in roots if r is not None]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        for nxt, _ in getattr(n, "next_functions", ()):
            if nxt is not None and id(nxt) not in seen:
                stack.append(nxt)


def _node_saved_tensors(node):
    out = []
    for attr in dir(node):
        if not attr.startswith("_saved_"):
            continue
        try:
            v = getattr(node, attr)
        except Exception:
            continue
        out.extend((attr, t) for t in _iter_tensors(v))
    # python custom autograd.Function nodes
    if hasattr(node, "saved_tensors"):
        try:
            for i, t in enumerate(node.saved_tensors):
                if isinstance(t, torch.Tensor):
                    out.append((f"saved_tensors[{i}]", t))
        except Exception:
            pass
    return out


def measure_saved_bytes(
    model_type: str,
    config_kwargs: dict,
    num_tokens: int,
    *,
    gradient_checkpointing: bool,
    attn_implementation: str = "sdpa",
    experts_implementation: str | None = None,
    include_loss: bool = False,
    seed: int = 0,
    model=None,
) -> dict:
    """Count bytes saved for backward by one forward of a tiny ``model_type`` model.

    Returns a dict with
      layers_bytes      bytes saved by all decoder layers together (excl. 'shared')
      per_layer_bytes   layers_bytes / num_layers
      per_layer_bytes_list  list, one entry per layer
      layer_bytes_per_token  per_layer_bytes / num_tokens
      total_bytes       every activation storage saved in the forward (all regions,
                        excl. parameters), incl. embedding, final norm, lm_head (+loss)
      region_bytes      {region: bytes}  regions: pre, layer{i}, shared, post, loss
      post_bytes        bytes saved after the last layer (final norm + lm_head)
      logits_bytes      nbytes of the logits tensor (output, not necessarily saved)
      logits_dtype
      param_saved_bytes bytes of parameter storages referenced by the graph (not activations)
      layer0_ops        {"module:GradFn": bytes} for layer 0 (ckpt off) / input tensors (ckpt on; the other
                        regions' op names are not looked up under checkpointing)
      layer_ops_by_layer {i: {...}} same for every layer
      post_ops, pre_ops, shared_ops   same for the other regions
      loss_bytes, loss_ops  (include_loss=True: what the loss saves after lm_head)
      shared_bytes, pre_bytes
      storages          {storage key: {nbytes, regions, region, module, dtype, shape}}
      num_layers, num_tokens, hidden_size, config (dict), attn_implementation,
      experts_implementation, seconds
    """
    t0 = time.time()
    if model is None:
        model = build_model(
            model_type,
            config_kwargs,
            attn_implementation=attn_implementation,
            experts_implementation=experts_implementation,
            seed=seed,
        )
    model.train()
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        if getattr(model, "is_gradient_checkpointing", False):
            model.gradient_checkpointing_disable()

    layers = model.model.layers
    num_layers = len(layers)

    param_keys = set()
    for p in list(model.parameters()) + list(model.buffers()):
        k = _storage_key(p)
        if k is not None:
            param_keys.add(k[0])

    state = {"region": "pre", "modstack": []}
    # storage key -> dict(nbytes, regions(set), first_region, module)
    saved: dict = {}
    param_saved: dict = {}

    def record(t: torch.Tensor, *, module: str | None = None):
        k = _storage_key(t)
        if k is None:
            return
        key, nbytes = k
        if key in param_keys:
            param_saved[key] = nbytes
            return
        ent = saved.get(key)
        region = state["region"]
        if ent is None:
            saved[key] = dict(
                nbytes=nbytes,
                regions={region},
                first_region=region,
                module=module if module is not None else (state["modstack"][-1] if state["modstack"] else ""),
                dtype=str(t.dtype).replace("torch.", ""),
                shape=tuple(t.shape),
            )
        else:
            ent["regions"].add(region)
            ent["nbytes"] = max(ent["nbytes"], nbytes)

    def pack(t):
        record(t)
        return t

    def unpack(t):
        return t

    handles = []
    restore_ckpt = []

    # region hooks on decoder layers
    for i, layer in enumerate(layers):

        def pre(mod, args, kwargs, i=i):
            state["region"] = f"layer{i}"

        def post(mod, args, kwargs, out, i=i):
            state["region"] = "post" if i == num_layers - 1 else f"between{i}"

        handles.append(layer.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(layer.register_forward_hook(post, with_kwargs=True))

        if gradient_checkpointing and getattr(layer, "gradient_checkpointing", False):
            # GradientCheckpointingLayer.__call__ calls checkpoint(...) *before* the
            # nn.Module hooks run; the checkpoint saves the positional inputs with
            # ctx.save_for_backward (goes through our pack hook).  Enter the layer's
            # region before that happens.
            orig = layer._gradient_checkpointing_func

            def wrapped(*a, _orig=orig, _i=i, **k):
                state["region"] = f"layer{_i}"
                state["modstack"].append("<ckpt input>")
                try:
                    return _orig(*a, **k)
                finally:
                    state["modstack"].pop()

            layer._gradient_checkpointing_func = wrapped
            restore_ckpt.append((layer, orig))

    # module-path hooks (innermost active module, path relative to its decoder layer)
    names = {}
    for name, mod in model.named_modules():
        if name.startswith("model.layers."):
            parts = name.split(".")
            rel = ".".join(parts[3:]) or "<layer>"
        else:
            rel = name or "<model>"
        names[mod] = rel

    def mpre(mod, args):
        state["modstack"].append(names.get(mod, "?"))

    def mpost(mod, args, out):
        if state["modstack"]:
            state["modstack"].pop()

    for mod in model.modules():
        handles.append(mod.register_forward_pre_hook(mpre))
        handles.append(mod.register_forward_hook(mpost))

    lm_head = model.get_output_embeddings()
    if include_loss and lm_head is not None:

        def after_head(mod, args, out):
            state["region"] = "loss"

        handles.append(lm_head.register_forward_hook(after_head))

    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, model.config.vocab_size, (1, num_tokens), generator=g)
    kwargs = dict(input_ids=input_ids, use_cache=False)
    if include_loss:
        kwargs["labels"] = input_ids

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = model(**kwargs)
    finally:
        for h in handles:
            h.remove()
        for layer, orig in restore_ckpt:
            layer._gradient_checkpointing_func = orig

    logits = out.logits
    loss = getattr(out, "loss", None)

    # --- per-op attribution by walking the graph
    roots = [logits.grad_fn]
    if loss is not None:
        roots.append(loss.grad_fn)
    key_to_node: dict = {}
    # Under non-reentrant checkpointing every read of a node's saved tensors runs torch.utils.checkpoint's
    # unpack_hook, i.e. recomputes the whole layer (~0.04 s each, ~3 s a model): the op names are diagnostics
    # only (the bytes come from the pack hook above), so they are not looked up there.
    for node in () if gradient_checkpointing else _walk_graph(roots):
        try:
            seq = node._sequence_nr()
        except Exception:
            seq = 1 << 62
        for _attr, t in _node_saved_tensors(node):
            k = _storage_key(t)
            if k is None:
                continue
            key = k[0]
            prev = key_to_node.get(key)
            if prev is None or seq < prev[0]:
                key_to_node[key] = (seq, type(node).__name__)

    # finalize regions
    region_bytes: dict = defaultdict(int)
    ops_by_region: dict = defaultdict(lambda: defaultdict(int))
    for key, ent in saved.items():
        regs = ent["regions"]
        region = ent["first_region"] if len(regs) == 1 else "shared"
        ent["region"] = region
        region_bytes[region] += ent["nbytes"]
        op = key_to_node.get(key, (0, "<not looked up>" if gradient_checkpointing else "<not in graph>"))[1]
        if ent["module"].startswith("<ckpt input>"):
            op = f"ckpt_input[{ent['dtype']}{list(ent['shape'])}]"
        ops_by_region[region][f"{ent['module']}:{op}"] += ent["nbytes"]

    per_layer = [region_bytes.get(f"layer{i}", 0) for i in range(num_layers)]
    layers_bytes = sum(per_layer)
    total = sum(region_bytes.values())
    cfg = model.config
    res = dict(
        model_type=model_type,
        num_layers=num_layers,
        num_tokens=num_tokens,
        hidden_size=cfg.hidden_size,
        gradient_checkpointing=gradient_checkpointing,
        attn_implementation=getattr(cfg, "_attn_implementation", attn_implementation),
        experts_implementation=getattr(cfg, "_experts_implementation", None),
        layers_bytes=layers_bytes,
        per_layer_bytes=layers_bytes / num_layers,
        per_layer_bytes_list=per_layer,
        layer_bytes_per_token=layers_bytes / num_layers / num_tokens,
        total_bytes=total,
        region_bytes=dict(region_bytes),
        post_bytes=region_bytes.get("post", 0),
        shared_bytes=region_bytes.get("shared", 0),
        pre_bytes=region_bytes.get("pre", 0),
        loss_bytes=region_bytes.get("loss", 0),
        loss_ops=dict(ops_by_region.get("loss", {})),
        logits_bytes=logits.untyped_storage().nbytes(),
        logits_dtype=str(logits.dtype),
        param_saved_bytes=sum(param_saved.values()),
        layer_ops_by_layer={i: dict(ops_by_region.get(f"layer{i}", {})) for i in range(num_layers)},
        layer0_ops=dict(ops_by_region.get("layer0", {})),
        post_ops=dict(ops_by_region.get("post", {})),
        pre_ops=dict(ops_by_region.get("pre", {})),
        shared_ops=dict(ops_by_region.get("shared", {})),
        config=cfg.to_dict(),
        storages=saved,
        seconds=None,
    )
    # keep the graph alive until here, then drop it
    del out, logits, loss
    if gradient_checkpointing:
        model.gradient_checkpointing_disable()
    res["seconds"] = time.time() - t0
    return res


# ---------------------------------------------------------------------------
# second method: TorchDispatchMode allocation tracking
# ---------------------------------------------------------------------------

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


class _LiveStorageTracker(TorchDispatchMode):
    """Tracks storages created by ops (outputs of every aten op) and whether they are alive.

    Liveness is detected with weakref.finalize on the untyped storage object of
    the op outputs.  ``live_bytes()`` = bytes of storages created under the mode
    that are still alive.
    """

    def __init__(self, exclude_keys=()):
        super().__init__()
        self.live: dict = {}  # key -> nbytes
        self.exclude = set(exclude_keys)
        self.cur = 0
        self.peak = 0
        self.peak_at = None
        self.op_count = 0

    def _free(self, key):
        nb = self.live.pop(key, None)
        if nb is not None:
            self.cur -= nb

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.op_count += 1
        for t in _iter_tensors(out):
            k = _storage_key(t)
            if k is None:
                continue
            key, nb = k
            if key in self.live or key in self.exclude:
                continue
            st = t.untyped_storage()
            self.live[key] = nb
            self.cur += nb
            try:
                weakref.finalize(st, self._free, key)
            except TypeError:
                pass
        if self.cur > self.peak:
            self.peak = self.cur
            self.peak_at = str(func)
        return out

    def live_bytes(self):
        return self.cur


def dispatch_cross_check(
    model_type: str,
    config_kwargs: dict,
    num_tokens: int,
    *,
    attn_implementation: str = "sdpa",
    seed: int = 0,
) -> dict:
    """Second method for the non-checkpointed case.

    Runs the forward under a TorchDispatchMode that tracks every storage
    created by an aten op, collects the garbage, and reports the bytes of
    storages still alive after the forward once the logits (the output) are
    excluded.  Live-after-forward == held by the autograd graph (saved
    tensors) + the output logits.  ``dispatch_total_bytes`` (= live minus
    logits plus the input_ids that the embedding saves, which were created
    outside the mode) should equal ``measure_saved_bytes(...)['total_bytes']``;
    ``match`` says whether it does.
    """
    import gc

    model = build_model(model_type, config_kwargs, attn_implementation=attn_implementation, seed=seed)
    pkeys = set()
    for p in list(model.parameters()) + list(model.buffers()):
        k = _storage_key(p)
        if k is not None:
            pkeys.add(k[0])
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, model.config.vocab_size, (1, num_tokens), generator=g)
    tracker = _LiveStorageTracker(exclude_keys=pkeys)
    with tracker:
        out = model(input_ids=input_ids, use_cache=False)
    gc.collect()
    logits = out.logits
    lk, lnb = _storage_key(logits)
    live = tracker.live_bytes()
    in_live = lk in tracker.live
    res = dict(
        live_after_forward=live,
        logits_bytes=lnb,
        live_minus_logits=live - (lnb if in_live else 0),
        # input_ids is created outside the mode but is saved by the embedding
        input_ids_bytes=input_ids.untyped_storage().nbytes(),
        peak_forward=tracker.peak,
    )
    ref = measure_saved_bytes(
        model_type,
        config_kwargs,
        num_tokens,
        gradient_checkpointing=False,
        attn_implementation=attn_implementation,
        seed=seed,
    )
    res["hook_total_bytes"] = ref["total_bytes"]
    res["dispatch_total_bytes"] = res["live_minus_logits"] + res["input_ids_bytes"]
    res["match"] = res["dispatch_total_bytes"] == ref["total_bytes"]
    del out, logits
    return res


def measure_peak_backward(
    model_type: str,
    config_kwargs: dict,
    num_tokens: int,
    *,
    gradient_checkpointing: bool,
    attn_implementation: str = "sdpa",
    include_loss: bool = True,
    seed: int = 0,
) -> dict:
    """Peak of live activation/gradient storages (excluding parameters) over forward+backward.

    Uses the TorchDispatchMode tracker above (counts every storage produced by
    an aten op while alive; parameter storages excluded; parameter .grad
    buffers ARE counted, since they are created by ops during backward).
    Rough CPU-side proxy for the GPU allocator peak (no fragmentation, no
    caching-allocator rounding, no workspace).
    """
    import gc

    model = build_model(model_type, config_kwargs, attn_implementation=attn_implementation, seed=seed)
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    pkeys = set()
    for p in list(model.parameters()) + list(model.buffers()):
        k = _storage_key(p)
        if k is not None:
            pkeys.add(k[0])
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, model.config.vocab_size, (1, num_tokens), generator=g)
    tracker = _LiveStorageTracker(exclude_keys=pkeys)
    with tracker:
        kw = dict(input_ids=input_ids, use_cache=False)
        if include_loss:
            kw["labels"] = input_ids
        out = model(**kw)
        gc.collect()
        after_fwd = tracker.live_bytes()
        peak_fwd = tracker.peak
        tracker.peak = tracker.cur
        target = out.loss if include_loss else out.logits.float().sum()
        target.backward()
        del out, target
        gc.collect()
        after_bwd = tracker.live_bytes()
    grad_bytes = sum(p.grad.untyped_storage().nbytes() for p in model.parameters() if p.grad is not None)
    return dict(
        live_after_forward=after_fwd,
        peak_forward=peak_fwd,
        peak_backward=tracker.peak,
        peak_backward_at=tracker.peak_at,
        live_after_backward=after_bwd,
        param_grad_bytes=grad_bytes,
        peak_backward_minus_grads=tracker.peak - grad_bytes,
    )
