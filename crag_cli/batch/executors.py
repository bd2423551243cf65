"""Who answers: this process (:class:`InProcess`; :class:`InFlight`, several questions at once), worker processes (:class:`WorkerPool`) or Ray actors (:class:`RayPool`); records come back in input order."""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Protocol, Sequence

from ..errors import CragError
from ..pipeline.modes import Mode
from .records import QuestionLine, error_record, to_record


def answer(pipeline, q: QuestionLine, mode: str) -> dict:
    """One input line's record: the pipeline's result, or an error record (never raises)."""
    if q.error:
        return error_record(q.id, q.question, q.error, q.line)
    try:
        return to_record(pipeline.run(q.question, id=q.id, answers=q.answers, task=q.task, mode=mode))
    except Exception as exc:  # one bad question never stops the batch
        return error_record(q.id, q.question, f"{type(exc).__name__}: {exc}", q.line)


GROUP_LINES = 8  # input lines whose passages and strips the evaluator scores together (crag mode)


def groups(questions: Iterable[QuestionLine], lines: int = GROUP_LINES) -> Iterator[list[QuestionLine]]:
    """Consecutive questions of the same block of ``lines`` input lines.

    Blocks are fixed by line number, not by what is left to answer, so a
    sequential, parallel or resumed run scores the same questions together.
    """
    group: list[QuestionLine] = []
    for q in questions:
        if group and (q.line - 1) // lines != (group[0].line - 1) // lines:
            yield group
            group = []
        group.append(q)
        if q.line % lines == 0:  # the block's last line: no need to wait for the next question
            yield group
            group = []
    if group:
        yield group


def iter_group(pipeline, group: Sequence[QuestionLine], mode: str) -> Iterator[Answered]:
    """Records of a group of questions (see :func:`groups`), each with the seconds it took, one by one
    as each question is answered.

    In ``crag`` mode the evaluator first scores the group's passages and strips
    together (:meth:`~crag_cli.pipeline.corrective.Pipeline.score_ahead`); each question's
    seconds include its share of that.
    """
    t0 = time.perf_counter()
    if Mode(mode) is Mode.CRAG:
        try:
            pipeline.score_ahead([q.question for q in group if not q.error])
        except Exception:  # scored again question by question, where a failure becomes that question's record
            pipeline.score_ahead([])
    share = (time.perf_counter() - t0) / len(group)
    for q in group:
        t1 = time.perf_counter()
        rec = answer(pipeline, q, mode)
        yield rec, share + time.perf_counter() - t1


def answer_group(pipeline, group: Sequence[QuestionLine], mode: str) -> list[Answered]:
    """:func:`iter_group` as a list (what a worker process sends back)."""
    return list(iter_group(pipeline, group, mode))


Answered = tuple  # (record, seconds it took)


class Answerer(Protocol):
    """Turns questions into records, in the order given (lazily: one group is asked for at a time)."""

    def __call__(self, questions: Iterable[QuestionLine]) -> Iterator[Answered]: ...


@dataclass
class InProcess:
    """Answers with one pipeline in this process, one group of questions after another."""

    pipeline: Any
    mode: str

    def __call__(self, questions: Iterable[QuestionLine]) -> Iterator[Answered]:
        for group in groups(questions):
            yield from iter_group(self.pipeline, group, self.mode)  # each record as soon as it is answered


def twin(pipeline):
    """A pipeline for another thread: the same index, models and reader; its own scores kept ahead."""
    from ..evaluator.evidence import Scorer

    other = copy.copy(pipeline)
    other._scorer = Scorer(pipeline.evaluator)
    other._ahead_seconds, other._known_ahead = {}, {}
    return other


@dataclass
class InFlight:
    """Answers ``parallel`` groups of questions at once, in threads of this process over one reader.

    The reader answers them in its parallel slots (crag's engine has ``--parallel`` of them; a served reader as
    many as its server runs) while the evaluator scores the next group. Each thread has its own
    :func:`twin` of the pipeline; records come back in input order, at most two groups per thread given out ahead.
    """

    pipeline: Any
    mode: str
    parallel: int

    def __call__(self, questions: Iterable[QuestionLine]) -> Iterator[Answered]:
        import threading
        from multiprocessing.pool import ThreadPool

        local = threading.local()

        def in_thread(group: list[QuestionLine]) -> list[Answered]:
            if not hasattr(local, "pipeline"):
                local.pipeline = twin(self.pipeline)
            return answer_group(local.pipeline, group, self.mode)

        pool = ThreadPool(self.parallel)
        try:
            for answered in _in_order(pool, groups(questions), window=2 * self.parallel, answer=in_thread):
                yield from answered
            pool.close()
        finally:
            pool.terminate()  # a thread finishes the question it is answering; no further one starts
            pool.join()


def split_threads(threads: int | None, workers: int) -> int:
    """Generation threads for each of ``workers`` processes sharing ``threads`` (default: all cores).

    Parameters
    ----------
    threads : int or None
        The total (``--threads``); ``None`` means every core of this machine.
    workers : int
        Processes that share them.

    Returns
    -------
    int
        ``threads // workers``, at least 1.
    """
    total = threads or os.cpu_count() or 1
    return max(1, total // workers)


_worker: dict[str, Any] = {}  # in a worker process: its pipeline and mode, or why it could not start


def _worker_start(settings, mode: str, ignore_sigint: bool = True) -> None:
    """A worker's initializer: build the pipeline and load its models once (an error is kept, not raised)."""
    import signal

    if ignore_sigint:  # a local worker process (a Ray actor's signals and life are Ray's)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
        _end_with_parent()
    _no_named_locks()
    try:
        import torch

        torch.set_num_threads(settings.threads)  # the evaluator's share of the cores too
        from .. import assemble

        pipe = assemble.pipeline(settings, with_reader=True, retrieve=Mode(mode).retrieves)
        load_models(pipe, mode)
        _worker.update(pipeline=pipe, mode=mode)
    except Exception as exc:  # multiprocessing would restart a failing initializer for ever
        _worker["error"] = (
            str(exc) if isinstance(exc, CragError) else f"a worker could not start: {type(exc).__name__}: {exc}"
        )


def _end_with_parent() -> None:
    """End this worker process as soon as the batch that started it is gone.

    A batch killed outright (SIGKILL, the out-of-memory killer) cannot stop its
    workers: they would answer on for nobody, holding their models' memory, until
    they next sent back an answer; meanwhile ``--resume`` would start two more.
    """
    import multiprocessing
    import threading
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        wait([parent.sentinel])  # readable when the parent's end of the pipe closes: it ended
        os._exit(1)

    threading.Thread(target=watch, name="crag-end-with-parent", daemon=True).start()


def _no_named_locks() -> None:
    """Give tqdm (progress bars of the model libraries) a thread lock, not its default multiprocessing one.

    That one is a named semaphore that a worker ended by the pool (``terminate``) leaves registered, and
    Python then warns at the batch's exit: "resource_tracker: There appear to be 1 leaked semaphore objects".
    """
    import threading

    try:
        from tqdm import tqdm
    except ImportError:
        return
    tqdm.set_lock(threading.RLock())


def _worker_answer(group: list[QuestionLine]) -> list[Answered]:
    if "error" in _worker:
        raise CragError(_worker["error"])
    return answer_group(_worker["pipeline"], group, _worker["mode"])


@dataclass
class WorkerPool:
    """Answers with ``workers`` processes, each building its own pipeline from ``settings`` once.

    The generation threads (``settings.threads``, default all cores) are split
    evenly between the workers (:func:`split_threads`), and the evaluator of
    each worker uses the same share. Records come back in input order (those
    finished early wait), so the output is the sequential run's; at most two
    groups per worker are given out ahead, so the questions are read as they
    are answered. Processes are
    spawned, not forked (the models' thread pools do not survive a fork); on
    an exception or Ctrl-C in the parent the workers are terminated and the
    questions in flight are abandoned, and a parent killed outright takes them
    with it (:func:`_end_with_parent`).
    """

    settings: Any
    mode: str
    workers: int

    def __call__(self, questions: Iterable[QuestionLine]) -> Iterator[Answered]:
        import multiprocessing

        share = self.settings.model_copy(update={"threads": split_threads(self.settings.threads, self.workers)})
        pool = multiprocessing.get_context("spawn").Pool(self.workers, _worker_start, (share, self.mode))
        try:
            for answered in _in_order(pool, groups(questions), window=2 * self.workers):
                yield from answered
            pool.close()
        finally:
            pool.terminate()
            pool.join()


def _in_order(pool, groups: Iterable[list[QuestionLine]], window: int, answer=None) -> Iterator[list[Answered]]:
    """Each group's records from the pool (``answer``: what answers a group there, default a worker process's),
    in input order, with at most ``window`` groups given out at a time (``Pool.imap`` would read every question
    at once)."""
    from collections import deque

    flying: deque = deque()
    for group in groups:
        flying.append(pool.apply_async(answer or _worker_answer, (group,)))
        if len(flying) >= window:
            yield flying.popleft().get()
    while flying:
        yield flying.popleft().get()


class _Replica:
    """A Ray actor's state: one pipeline with its models loaded once (see :class:`RayPool`)."""

    def __init__(self, settings, mode: str) -> None:
        import socket

        self.error: str | None = None
        try:
            _worker_start(settings, mode, ignore_sigint=False)  # a local worker's start; Ray owns the signals
        finally:
            if "error" in _worker:
                self.error = f"a Ray actor on {socket.gethostname()} cannot start: {_worker['error']}"

    def ready(self) -> str | None:
        return self.error

    def answer(self, group: list[QuestionLine]) -> list[Answered]:
        return _worker_answer(group)


def ray_missing() -> str | None:
    """Why ``--ray`` cannot run here (the optional extra is not installed), or ``None``."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "--ray needs Ray: pip install 'crag-cli[ray]'"
    return None


@dataclass
class RayPool:
    """Answers with ``actors`` Ray actors, each one model replica that loads the models once.

    ``address`` is a running cluster's (``HOST:6379`` or ``ray://HOST:10001``);
    ``"local"`` starts a Ray instance on 127.0.0.1 for this batch and stops it
    after. Every actor asks for ``threads`` CPUs (the generation threads of
    each: ``settings.threads`` split between the actors, as for local workers);
    a cluster with no node that large is refused. Index, model and evaluator
    paths are made absolute and must exist on every node at that path (a shared
    file system, or the same copy on each); an actor that cannot see them,
    cannot load a model, or dies ends the batch with one error line. Each actor
    gets its next group of questions (:func:`groups`) as soon as it returns one;
    the records come back in input order (at most ``2 × actors`` finished groups
    wait for a slower one).
    """

    settings: Any
    mode: str
    actors: int
    address: str = "local"

    def __call__(self, questions: Iterable[QuestionLine]) -> Iterator[Answered]:
        import ray

        from ..evaluator import absolute_spec

        threads = split_threads(self.settings.threads, self.actors)
        update: dict[str, Any] = {
            "threads": threads,
            "index": Path(os.path.abspath(self.settings.index)),
            "evaluator": absolute_spec(self.settings.evaluator),
        }
        model = self.settings.model
        model_file = self.settings.reader_backend.user_file(model)
        if model_file is not None and os.path.abspath(model) == os.path.abspath(model_file):
            update["model"] = os.path.abspath(model_file)  # a path the value is: the same path on every node
        share = self.settings.model_copy(update=update)
        started = not ray.is_initialized()
        if started:
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "warning"}
            if self.address == "local":
                options.update(
                    address="local", _node_ip_address="127.0.0.1", num_cpus=max(os.cpu_count() or 1, threads)
                )
            else:
                options["address"] = self.address
            try:
                ray.init(**options)
            except Exception as exc:
                raise CragError(f"cannot reach the Ray cluster at {self.address}: {_first_line(exc)}") from None
        replicas: list = []
        try:
            largest = max((n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive")), default=0)
            if largest < threads:
                raise CragError(
                    f"each Ray actor needs {threads} CPUs (--threads split between {self.actors} actors), "
                    f"but the largest node has {largest:g}: lower --threads"
                )
            Replica = ray.remote(num_cpus=threads)(_Replica)
            replicas = [Replica.remote(share, self.mode) for _ in range(self.actors)]
            for problem in _ray_get(ray, [r.ready.remote() for r in replicas]):
                if problem:
                    raise CragError(problem)
            for answered in _ordered(ray, replicas, groups(questions), window=2 * self.actors):
                yield from answered
        finally:
            for r in replicas:
                ray.kill(r)
            if started:
                ray.shutdown()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _ray_get(ray, refs):
    """``ray.get``, with a Ray failure (an actor died, a task crashed) as one :class:`CragError` line."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayError as exc:
        raise CragError(f"a Ray actor failed: {type(exc).__name__}: {_first_line(exc)}") from None


def _ordered(ray, replicas: list, questions: Iterable, window: int) -> Iterator:
    """Hand each free actor the next group of questions; yield what they return in input order."""
    free = list(replicas)
    flying: dict = {}  # object ref -> (position, actor)
    done: dict[int, Answered] = {}
    todo = enumerate(questions)
    next_out, given, exhausted = 0, 0, False
    while True:
        while free and not exhausted and given - next_out < window:
            try:
                i, q = next(todo)
            except StopIteration:
                exhausted = True
                break
            actor = free.pop()
            flying[actor.answer.remote(q)] = (i, actor)
            given += 1
        if not flying:
            return
        ready, _ = ray.wait(list(flying), num_returns=1)
        for ref in ready:
            i, actor = flying.pop(ref)
            done[i] = _ray_get(ray, ref)
            free.append(actor)
        while next_out in done:
            yield done.pop(next_out)
            next_out += 1


def load_models(pipeline, mode: str) -> None:
    """Load the models a mode uses now, so that no question's timings include loading one."""
    if pipeline.reader is not None:
        pipeline.reader.load()
    mode = Mode(mode)
    if mode.uses_evaluator(pipeline.task):
        if mode is Mode.RAG:
            pipeline.evaluator.knows([])  # plain RAG only asks a domain: this loads what an evaluator needs for it
        else:
            pipeline.evaluator.load()
    if "web" in mode.groups:
        if pipeline.web is not None and pipeline.web.reader is not None:
            pipeline.web.reader.load()
