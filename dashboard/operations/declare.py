"""One declaration per operation (:class:`Operation`): from it come its page, its JSON API
and its OpenAPI entry (:mod:`dashboard.operations.openapi`), both views under the one
guard (:mod:`dashboard.guard`), so they differ only in how they read and answer."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Annotated, Any, Generic, Literal, TypeVar

import msgspec
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import URLPattern, path, re_path, reverse
from django.views.decorators.http import require_http_methods

from dashboard.api.auth import api_view
from dashboard.guard import page_guard
from dashboard.permissions import (
    ADMIN,
    OPERATOR,
    ROLES,
    VIEWER,
    Action,
    actions_for,
    can_map,
    require_action_somewhere,
)
from dashboard.selectors.pages.params import convert, doc
from dashboard.services.audit import Actor, origin_from_request

__all__ = [
    "FORM_TRUE",
    "Api",
    "Call",
    "NoInput",
    "Operation",
    "Page",
    "Reason",
    "Why",
    "api_path",
    "doc",
    "in_cluster",
    "read_form",
    "read_json",
    "read_query",
    "route",
]

In = TypeVar("In")
View = Callable[..., HttpResponseBase]
Decorator = Callable[[View], View]
LOOSE = {"default": str}  # mqcore values in an answer: as text
FORM_TRUE = frozenset({"1", "on", "true", "yes"})  # a checked box, in a form or a query


def route(tail: str = "", *, topic: bool = True) -> str:
    """A page's route under the URL's topic (or ``topic=False``: its cluster):
    ``route("retention")`` -> ``clusters/<str:cluster>/topics/<str:topic>/retention/``."""
    page = "clusters/<str:cluster>/" + ("topics/<str:topic>/" if topic else "")
    return page + (f"{tail}/" if tail else "")


def api_path(page: str) -> str:
    """A page's route -> its API twin's: ``x/<str:y>/`` -> ``api/v1/x/<str:y>``, a regex
    ``^x/(?P<y>...)/$`` -> ``^api/v1/x/(?P<y>...)$``."""
    if page.startswith("^"):
        return "^api/v1/" + page[1:].removesuffix("$").rstrip("/") + "$"
    return "api/v1/" + page.rstrip("/")


Why = Annotated[str, doc("why (recorded in the audit log)")]


class NoInput(msgspec.Struct):
    """The input of an operation that reads nothing but its URL."""


class Reason(msgspec.Struct):
    """Why (recorded in the audit log): the input of most writes (subclass it to add)."""

    reason: Why = ""


@dataclass(frozen=True)
class Call(Generic[In]):
    """One request of an operation: who, the URL's values and the typed input."""

    request: HttpRequest
    url: Mapping[str, Any]
    input: In

    @property
    def user(self) -> Any:
        return self.request.user

    @property
    def cluster(self) -> str:
        return str(self.url["cluster"])

    @property
    def topic(self) -> str:
        return str(self.url["topic"])

    @cached_property
    def actor(self) -> Actor:
        """Who acts, from which request, on the URL's cluster and topic (a service's; one
        per request: one request id when the client sent none)."""
        where = {k: str(self.url[k]) for k in ("cluster", "topic") if k in self.url}
        return Actor(self.user, origin_from_request(self.request), **where)

    @property
    def form(self) -> QueryDict:
        """What the request sent: its form (a POST) or its query."""
        return self.request.POST if self.request.method == "POST" else self.request.GET

    @property
    def can(self) -> dict[str, bool]:
        """What the user may do on the URL's topic (the buttons a page shows)."""
        return can_map(actions_for(self.user, cluster=self.cluster, topic=self.topic))

    def read(self) -> dict[str, Any]:
        """A selector's keyword arguments: the user, the URL's values, the input's fields."""
        return {"user": self.user, **self.url, **msgspec.structs.asdict(self.input)}  # type: ignore[arg-type]

    def write(self) -> dict[str, Any]:
        """A service's: the :attr:`actor`, the URL's other values, the input's fields."""
        url = {k: v for k, v in self.url.items() if k not in ("cluster", "topic")}
        return {"actor": self.actor, **url, **msgspec.structs.asdict(self.input)}  # type: ignore[arg-type]

    def back(
        self, text: str, to: str, *keys: str, info: bool = False, query: str = "", **more: Any
    ) -> HttpResponse:
        """A write page's answer: ``text`` as a message, then the page ``to`` (a URL name of
        the console) with the URL's values ``keys`` (default: its cluster and topic)."""
        (messages.info if info else messages.success)(self.request, text)
        keys = keys or tuple(k for k in ("cluster", "topic") if k in self.url)
        return self.to(to, query, **{k: self.url[k] for k in keys}, **more)

    def to(self, name: str, query: str = "", **values: Any) -> HttpResponse:
        """A redirect to the console's page ``name`` (``?query`` when given)."""
        url = reverse(f"dashboard:{name}", kwargs=values)
        return redirect(f"{url}?{query}" if query else url)


Run = Callable[[Call[Any]], Any]
Answer = Callable[[Call[Any], Any], Any]


def in_cluster(call: Call[Any], data: dict[str, Any]) -> dict[str, Any]:
    """An API answer: the URL's cluster, then the result's fields."""
    return {"cluster": call.cluster, **data}


@dataclass(frozen=True)
class Page:
    """A page of an operation. ``path`` is a Django route (a regex when it starts with ``^``);
    ``template`` is rendered, only its region for an htmx request when it names one
    (``"dashboard/leases.html#live"``); ``context(call, result)`` is added to the URL's values
    (default ``{shown: result}``, ``shown`` being ``"result"`` unless the page names it);
    ``answer(call, result)`` replaces the render (a
    redirect), as does a result that is a response (a file). A page whose query or form has
    a shape of its own (a page number, the checked rows) names its ``input`` and ``run``
    (default: the operation's), and its ``early`` when the guard's differs. A write's page
    that answers with a message and another page says so in ``back``: ``(text, to, *keys)``
    (``text`` formatted with the URL's values, the input's fields and the result's; the
    page ``to`` with the URL's values ``keys``, by default its cluster and topic)."""

    name: str = ""
    path: str = ""
    method: str = "GET"
    template: str = ""
    form: Callable[[QueryDict, dict[str, Any]], dict[str, Any]] | None = None
    context: Answer | None = None
    answer: Callable[[Call[Any], Any], HttpResponseBase] | None = None
    input: type[msgspec.Struct] | None = None
    run: Run | None = None
    early: bool | None = None  # None: the operation's
    back: tuple[str, ...] = ()
    shown: str = "result"

    def __post_init__(self) -> None:
        if self.back:
            object.__setattr__(self, "answer", self._back)

    def _back(self, call: Call[Any], result: Any) -> HttpResponse:
        """The answer ``back`` declares (a result that is not a dict is ``{result}``)."""
        text, to, *keys = self.back
        found = result if isinstance(result, dict) else {"result": result}
        values = {**call.url, **msgspec.structs.asdict(call.input), **found}
        return call.back(text.format(**values), to, *keys)


@dataclass(frozen=True)
class Api:
    """The JSON twin, by default named ``api-`` + its page's name, at :func:`api_path` of
    its route, with its method. ``answer(call, result)`` shapes the result (default: as is)
    or answers itself (a file, a stream: ``csv`` documents text/csv beside JSON); ``loose``
    writes values JSON does not know as text."""

    name: str = ""
    path: str = ""
    method: str = ""
    status: int = 200
    answer: Answer | None = None
    loose: bool = False
    csv: bool = False


@dataclass(frozen=True)
class Operation:
    """One operation: what it is (``summary``, ``tag``: the document), its permission
    (``action``: the role shown, and a 403 before the input is read as ``early`` says:
    see :meth:`guard_action`), its ``input`` struct, ``run`` (None: a page that only
    renders), its ``page`` (and more ``pages``), its ``api`` (named and routed after its
    first page unless it says otherwise; none when its pages name the ``twin`` they answer
    to) and the ``decorators`` of each of its views (rate limits). Declared, ``pages`` holds
    every page and ``api`` has its name, route and method."""

    summary: str
    tag: str
    action: Action
    input: type[msgspec.Struct] = NoInput
    run: Run | None = None
    page: Page | None = None
    pages: tuple[Page, ...] = ()
    api: Api | None = Api()
    early: bool | Literal["somewhere"] = True  # see guard_action()
    twin: str = ""
    decorators: tuple[Decorator, ...] = ()

    def __post_init__(self) -> None:
        pages = (self.page, *self.pages) if self.page else self.pages
        object.__setattr__(self, "pages", pages)
        if self.twin or self.api is None:
            object.__setattr__(self, "api", None)
            return
        page = pages[0] if pages else Page()
        if not pages and not (self.api.name and self.api.path):
            raise ValueError(f"{self.summary}: an API without a page names its name and route")
        api = replace(self.api, method=self.api.method or page.method)
        api = replace(api, name=api.name or f"api-{page.name}")
        object.__setattr__(self, "api", replace(api, path=api.path or api_path(page.path)))

    @property
    def role(self) -> str:
        """The least role that holds ``action`` (the document's "Role: ... or above")."""
        return next(r for r in (VIEWER, OPERATOR, ADMIN) if self.action in ROLES[r])

    def guard_action(self, page: Page | None = None) -> Action | None:
        """``early`` (a page's own first) True: the guard checks ``action`` on the URL's
        cluster and topic before the input is read; "somewhere": on any scope (a global URL
        naming an object whose topic the service checks, e.g. an alert; see
        :meth:`check_early`); False: the service alone decides."""
        early = self.early if page is None or page.early is None else page.early
        return self.action if early is True else None

    def check_early(self, request: HttpRequest, page: Page | None = None) -> None:
        if self.early == "somewhere" and (page is None or page.early is None):
            require_action_somewhere(request.user, self.action)

    def urls(self) -> list[URLPattern]:
        views = [(p.path, _page_view(self, p), p.name) for p in self.pages]
        if self.api is not None:
            views.append((self.api.path, _api_view(self, self.api), self.api.name))
        return [(re_path if r.startswith("^") else path)(r, v, name=n) for r, v, n in views]


def _bare(tp: Any) -> Any:
    """A type without its ``Annotated`` metadata."""
    return typing.get_args(tp)[0] if typing.get_origin(tp) is typing.Annotated else tp


def _kinds(tp: Any) -> set[Any]:
    """The plain types a field's annotation allows: ``list[int] | None`` -> list, None."""
    tp = _bare(tp)
    union = typing.get_origin(tp) in (typing.Union, types.UnionType)
    args = [_bare(a) for a in (typing.get_args(tp) if union else (tp,))]
    return {typing.get_origin(a) or a for a in args}


def read_form(data: QueryDict, kind: type[In]) -> dict[str, Any]:
    """A form's (or a query's) fields of ``kind`` as JSON would send them: lists for list
    fields, checkboxes as booleans, a field of a non-text type stripped (left out when
    empty)."""
    out: dict[str, Any] = {}
    for f in msgspec.structs.fields(kind):  # type: ignore[arg-type]
        name, kinds = f.encode_name, _kinds(f.type)
        if list in kinds:
            if name in data:
                out[name] = data.getlist(name)
        elif kinds == {bool}:
            out[name] = data.get(name, "") in FORM_TRUE
        elif name in data:
            value = data.get(name, "") if str in kinds else data.get(name, "").strip()
            if value != "" or str in kinds:
                out[name] = value
    return out


def read_json(request: HttpRequest, kind: type[In]) -> In:
    """The JSON body (``{}`` when empty) as ``kind``, strictly typed."""
    try:
        data = json.loads(request.body or b"{}")
    except ValueError as exc:
        raise ValueError("body must be a JSON object") from exc
    if not isinstance(data, dict):
        raise ValueError("body must be a JSON object")
    return convert(data, kind, strict=True)


def read_query(data: QueryDict, kind: type[In]) -> In:
    """A form or a query as ``kind`` (text read as numbers; ValueError ``field: ...``): for a
    page that shows its form again with the error, reading it in its ``answer``."""
    return convert(read_form(data, kind), kind, strict=False)


def _form_input(kind: type[In], data: QueryDict, page: Page | None = None) -> In:
    """A form or a query as ``kind`` (text read as numbers), through a page's ``form``."""
    raw = read_form(data, kind)
    if page is not None and page.form is not None:
        raw = page.form(data, raw)
    return convert(raw, kind, strict=False)


def _page_view(op: Operation, page: Page) -> View:
    def view(request: HttpRequest, **url: Any) -> HttpResponseBase:
        op.check_early(request, page)
        data = request.POST if page.method == "POST" else request.GET
        call = Call(request, url, _form_input(page.input or op.input, data, page))
        run = page.run or op.run
        result = run(call) if run is not None else None
        if page.answer is not None:
            return page.answer(call, result)
        if isinstance(result, HttpResponseBase):  # a file, a stream
            return result
        extra = page.context(call, result) if page.context else {page.shown: result}
        return render(request, _template(page.template, request), {**url, **extra})

    view.__name__ = view.__qualname__ = page.name.replace("-", "_")
    guarded = (
        page_guard(op.guard_action(page)),
        login_required,
        require_http_methods([page.method]),
    )
    return _wrap(view, op.decorators, *guarded)


def _api_view(op: Operation, api: Api) -> View:
    def view(request: HttpRequest, **url: Any) -> HttpResponseBase:
        op.check_early(request)
        if api.method == "GET":
            data = _form_input(op.input, request.GET)
        else:
            data = read_json(request, op.input)
        call = Call(request, url, data)
        result = op.run(call) if op.run is not None else None
        out = api.answer(call, result) if api.answer is not None else result
        if isinstance(out, HttpResponseBase):  # a file, a stream
            return out
        return JsonResponse(out, status=api.status, json_dumps_params=LOOSE if api.loose else None)

    view.__name__ = view.__qualname__ = api.name.replace("-", "_")
    return _wrap(view, op.decorators, api_view(api.method, action=op.guard_action()))


def _template(name: str, request: HttpRequest) -> str:
    """``page.html#region``: the page, or only its region for an htmx request (django-htmx's
    middleware sets ``request.htmx``, truthy for a request with the ``HX-Request`` header)."""
    return name if getattr(request, "htmx", False) else name.partition("#")[0]


def _wrap(view: View, inner: tuple[Decorator, ...], *outer: Callable[[Any], Any]) -> View:
    """``inner`` closest to the view (the first outermost of them), then ``outer``."""
    for decorate in (*reversed(inner), *outer):
        view = decorate(view)
    return view
