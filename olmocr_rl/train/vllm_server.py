"""`olmocr-rl train --vllm-gpus K`: a vLLM generation server on the last K GPUs of this node, the
training ranks on the others, and nothing left running afterwards.

The server command is the one the installed trl builds (`trl.scripts.vllm_serve.build_command`:
stock `vllm serve` plus the weight-transfer, logprobs and scale-out flags trl's client needs, with
`VLLM_SERVER_DEV_MODE=1`), so it follows trl as trl follows vLLM (huggingface/trl#6765). Its output
goes to OUTPUT_DIR/logs/vllm.log. `olmocr_rl.launch.supervise` waits for its /health endpoint (the
process dying or the timeout ends the wait, with the log's last lines), then runs the training
launcher with `vllm_mode=server` and the server's address in the resolved config, and watches
both: a server that dies mid-run stops the training, and every process is stopped when training
ends, fails or is interrupted (olmocr_rl/launch/).

Several nodes: the server runs on machine rank 0 and listens on every interface; every node's
config names the rank-0 address (--main-process-ip), which is where trl's client (global rank 0,
on machine 0) and its NCCL weight-update group connect. Each node trains on its first N - K GPUs.
"""

from __future__ import annotations

import shlex

from olmocr_rl.launch.gpus import GpuSplit
from olmocr_rl.train.config import TrainConfig, engine_settings
from olmocr_rl.train.grpo import max_model_length


def server_argv(cfg: TrainConfig, split: GpuSplit, *, host: str, port: int, for_node: bool = False) -> list[str]:
    """The server command trl documents for the installed trl and vLLM (see the module docstring).
    `for_node`: the plan is for another machine (--gpus): where this one has no vLLM >= 0.30, trl
    leaves out `--enable-scale-out`, which the node's vLLM (trl's window reaches 0.31) needs for
    image requests; it is added as trl adds it there."""
    from trl.scripts.vllm_serve import ScriptArguments, build_command

    args = ScriptArguments(
        model=cfg.model, host=host, port=port, tensor_parallel_size=split.tensor_parallel,
        data_parallel_size=split.data_parallel, gpu_memory_utilization=cfg.vllm_server_gpu_memory_utilization,
        max_model_len=max_model_length(cfg), trust_remote_code=cfg.trust_remote_code,
        dtype="bfloat16" if cfg.bf16 else "auto", enforce_eager=cfg.vllm_enforce_eager or None,
    )  # fmt: skip
    argv = build_command(args, [*engine_args(cfg), *(str(a) for a in cfg.vllm_server_args)])
    if for_node and "--enable-scale-out" not in argv and "--weight-transfer-config" in argv:
        argv.insert(argv.index("--weight-transfer-config"), "--enable-scale-out")
    if cfg.vllm_server_command:
        argv = shlex.split(cfg.vllm_server_command) + argv[argv.index("serve") + 1 :]
    return argv


def engine_args(cfg: TrainConfig) -> list[str]:
    """`vllm serve` arguments that trl's command leaves out: the run's engine settings
    (olmocr_rl/engines.py), its seed, the trainer's processor bounds and, with the loop stop, its
    logits processor (olmocr_rl/loop_stop_vllm.py, imported by the server: olmocr-rl must be
    installed where the server runs). Placeholder suppression and the loop stop's switch travel with
    each request (`extra_args`)."""
    import json

    from olmocr_rl.loops import VLLM_PROCESSOR

    settings = engine_settings(cfg)
    args = ["--seed", str(settings.seed)]
    if bounds := settings.pixel_bounds():
        args += ["--mm-processor-kwargs", json.dumps(bounds)]
    if settings.loop_rule is not None:
        args += ["--logits-processors", VLLM_PROCESSOR]
    return args


def weight_sync_port(cfg: TrainConfig) -> int:
    """The port of trl's weight-sync group between the trainer and the server (GRPOConfig's
    vllm_group_port, 51216 unless set under `trl:`)."""
    return int(cfg.trl.get("vllm_group_port", 51216))


def port_problems(cfg: TrainConfig) -> list:
    """The server's port and trl's weight-sync port must be free on this node: two runs on one node
    would otherwise meet on trl's fixed 51216 only when the first weights are pushed."""
    from olmocr_rl.launch.server import port_free
    from olmocr_rl.train.preflight import Problem

    out = []
    for port, key, what in ((cfg.vllm_server_port, "vllm_server_port", "the vLLM server"),
                            (weight_sync_port(cfg), "trl.vllm_group_port", "trl's weight sync")):  # fmt: skip
        if not port_free(port):
            out.append(Problem(key, f"port {port} for {what} is in use on this node (another run?)", f"set {key} to a free port"))
    return out
