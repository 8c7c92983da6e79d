"""Execution planned once per document: a query's selection compiled into a tree of
field plans, run without graphql-core's per-field machinery, giving the same response.

A :class:`Plan` does the document's part once (collected fields per object type,
literal arguments, completers); per request a field without a resolver is one
``getattr``, ``__typename`` a constant, a Relay node's ``id`` its NodeID attribute in
base64, any other field calls ``field_def.resolve`` with the resolve info graphql-core
would build, and values complete as graphql-core completes them (awaitable siblings and
list items gathered in its order, so dataloaders batch alike). Planned: queries without
directives or fragment variables, no introspection beyond ``__typename``, no abstract
return type; :func:`build_plan` returns None else.

A resolver's error is handled as graphql-core handles it (located, recorded, the field
or its nearest nullable parent null). Anything else off the plain path raises
:class:`Abandoned`: the caller reruns the operation on graphql-core, which reports it
exactly; a query has nothing to repeat (rate limits and guards are charged before).
"""

from __future__ import annotations

import asyncio
import binascii
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import CoroutineType
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLID,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    get_operation_ast,
    is_abstract_type,
    is_leaf_type,
    is_list_type,
    is_non_null_type,
    is_object_type,
)
from graphql.error import located_error
from graphql.execution.values import get_argument_values
from graphql.language import ListValueNode, ObjectValueNode, ValueNode
from graphql.pyutils import Path, Undefined
from strawberry import relay

#: Strawberry's backreference from a graphql-core field to its StrawberryField, and from
#: an object type to its StrawberryObjectDefinition.
_STRAWBERRY_FIELD = _STRAWBERRY_TYPE = "strawberry-definition"


class Unplannable(Exception):
    """The document uses something a plan does not handle: run it on graphql-core."""


class Abandoned(Exception):
    """A planned run met a value off the plain path: rerun it on graphql-core."""


#: A completer: (run, value, path) -> the response value, or a coroutine of it (only ever
#: one of this module's, so a completion is tested by ``type(done) is CoroutineType``;
#: resolvers' values by the executor's ``is_awaitable``).
Completer = Callable[["_Run", Any, Path | None], Any]


@dataclass(slots=True)
class FieldPlan:
    """One response key of an object: how its value is read and completed."""

    key: str
    field_def: GraphQLField | None  # None: __typename
    nodes: list[FieldNode]
    parent_type: GraphQLObjectType
    attr: str | None  # read by getattr (Strawberry's default resolver)
    typename: str | None  # __typename's constant
    args: dict[str, Any] | None  # literal arguments, coerced once; None: per request
    complete: Completer
    #: The resolver, called as Strawberry's wrapper calls it: (source, Strawberry Info).
    direct: Callable[[Any, Any], Any] | None = None
    #: Whether the value's completion needs its response path (a resolver below it).
    needs_path: bool = True
    #: Whether the completion is a leaf's (never awaitable).
    leaf: bool = False
    #: Whether the field's type is non-null (an error at it nulls the parent).
    non_null: bool = False
    #: Strawberry's Info of the field from graphql-core's (for ``direct``).
    make_info: Callable[[Any], Any] | None = None
    #: A Relay ``id``'s response value from the source, or None: run ``direct``.
    node_id: Callable[[Any], str | None] | None = None


@dataclass(slots=True)
class ObjectPlan:
    """The fields of one selection on one object type, in response order."""

    type: GraphQLObjectType
    fields: list[FieldPlan]


@dataclass(slots=True)
class Plan:
    """A query operation, planned: its root object plan, and ``static``, the data of an
    operation that reads nothing (only ``__typename`` at the root, no variables)."""

    root: ObjectPlan
    static: dict[str, Any] | None = None

    async def run(self, executor: Any) -> tuple[dict[str, Any] | None, list[GraphQLError]]:
        """The response ``data`` and field errors, run with ``executor`` (a graphql-core
        Executor built for this request). Raises :class:`Abandoned` where graphql-core
        must run the operation instead."""
        run = _Run(executor)
        try:
            data = run.object(self.root, executor.root_value, None)
            if type(data) is CoroutineType:
                data = await data
        except GraphQLError as error:  # a non-null root field failed: no data
            run.errors.add(error, None)
            return None, run.errors.errors
        return data, run.errors.errors


class _Run:
    """One planned execution: the executor's request state and the walk."""

    __slots__ = ("build_info", "errors", "executor", "is_awaitable", "variables")

    def __init__(self, executor: Any) -> None:
        self.executor = executor
        self.is_awaitable = executor.is_awaitable
        self.build_info = executor.build_resolve_info
        self.variables = executor.variable_values
        self.errors = executor.collected_errors

    def field_error(
        self, raw: Exception, nodes: list[FieldNode], path: Path, non_null: bool
    ) -> None:
        """graphql-core's ``handle_field_error``: raise at a non-null position, else record."""
        if isinstance(raw, Abandoned):
            raise raw
        error = located_error(raw, nodes, path.as_list())
        if non_null:
            raise error
        self.errors.add(error, path)

    def object(self, plan: ObjectPlan, source: Any, path: Path | None) -> Any:
        """The response object of ``plan`` on ``source``, or an awaitable of it."""
        out: dict[str, Any] = {}
        pending: list[str] | None = None
        type_name = plan.type.name
        is_awaitable = self.is_awaitable
        try:
            for f in plan.fields:
                key = f.key
                if f.typename is not None:
                    out[key] = f.typename
                    continue
                try:
                    if f.attr is not None:
                        value = getattr(source, f.attr)
                        field_path = Path(path, key, type_name) if f.needs_path else path
                        if f.leaf and type(value) in _PLAIN:
                            out[key] = f.complete(self, value, field_path)
                            continue
                    else:
                        if f.node_id is not None:
                            value = f.node_id(source)
                            if value is not None:
                                out[key] = value
                                continue
                        field_path = Path(path, key, type_name)
                        field_def = f.field_def
                        assert field_def is not None
                        if f.direct is not None:
                            value = f.direct(source, _LazyInfo(self, f, field_path))
                        else:
                            info = self.build_info(field_def, f.nodes, f.parent_type, field_path)
                            args = f.args
                            if args is None:  # a refused value is this field's error
                                args = get_argument_values(field_def, f.nodes[0], self.variables)
                            value = field_def.resolve(source, info, **args)  # type: ignore[misc]
                    if is_awaitable(value):
                        value = self._later_field(f, value, field_path, path, type_name)
                    else:
                        value = f.complete(self, value, field_path)
                        if f.leaf:
                            out[key] = value
                            continue
                    out[key] = value
                    if type(value) is CoroutineType:
                        if pending is None:
                            pending = []
                        pending.append(key)
                except Exception as raw:  # graphql-core's handling of a field error
                    self.field_error(raw, f.nodes, Path(path, key, type_name), f.non_null)
                    out[key] = None
        except BaseException:
            _discard(out[k] for k in pending or ())
            raise
        if pending is None:
            return out
        return self._gather_fields(out, pending)

    async def _later_field(
        self, f: FieldPlan, value: Any, field_path: Path | None, path: Path | None, type_name: str
    ) -> Any:
        """A field's awaited value, completed; its error handled as graphql-core does."""
        try:
            done = f.complete(self, await value, field_path)
            if type(done) is CoroutineType:
                done = await done
            return done
        except Exception as raw:
            self.field_error(raw, f.nodes, Path(path, f.key, type_name), f.non_null)
            return None

    async def _later_item(
        self, complete: Completer, value: Any, path: Path, nodes: list[FieldNode], non_null: bool
    ) -> Any:
        """A list item's awaited value, completed (errors: :meth:`_catch_item`)."""
        done = complete(self, await value, path)
        if type(done) is CoroutineType:
            done = await done
        return done

    async def _catch_item(
        self, done: Any, path: Path, nodes: list[FieldNode], non_null: bool
    ) -> Any:
        """An awaited list item; its error handled as graphql-core does."""
        try:
            return await done
        except Exception as raw:
            self.field_error(raw, nodes, path, non_null)
            return None

    async def _gather_fields(self, out: dict[str, Any], pending: list[str]) -> dict[str, Any]:
        if len(pending) == 1:
            key = pending[0]
            out[key] = await out[key]
            return out
        values = await _gather([out[k] for k in pending])
        out.update(zip(pending, values, strict=True))
        return out


class _LazyInfo:
    """Strawberry's ``Info`` of a directly called resolver, built on first use."""

    __slots__ = ("_field", "_info", "_path", "_run")

    def __init__(self, run: _Run, field: FieldPlan, path: Path) -> None:
        self._run = run
        self._field = field
        self._path = path
        self._info: Any = None

    def __getattr__(self, name: str) -> Any:
        info = self._info
        if info is None:
            f = self._field
            raw = self._run.build_info(f.field_def, f.nodes, f.parent_type, self._path)
            assert f.make_info is not None  # set with ``direct``
            info = self._info = f.make_info(raw)
        return getattr(info, name)


def _discard(awaitables: Any) -> None:
    """Close the coroutines of a run that is given up before they were awaited."""
    for a in awaitables:
        close = getattr(a, "close", None)
        if close is not None:
            close()


async def _gather(awaitables: Sequence[Any]) -> list[Any]:
    """Await all concurrently, in order. An error out of any abandons the plan once all
    have settled: graphql-core cancels the siblings of a failed non-null field."""
    values = await asyncio.gather(*awaitables, return_exceptions=True)
    for v in values:
        if isinstance(v, Abandoned):
            raise v
    for v in values:
        if isinstance(v, BaseException):
            if isinstance(v, Exception):
                raise Abandoned from v
            raise v
    return values


# --- completers --------------------------------------------------------------------------

#: Types whose values are never awaitable (Strawberry's fast path of ``is_awaitable``).
_PLAIN = frozenset({type(None), bool, int, float, str})


def _non_null(inner: Completer) -> Completer:
    def complete(run: _Run, value: Any, path: Path | None) -> Any:
        if value is None or isinstance(value, Exception):
            raise Abandoned
        return inner(run, value, path)

    return complete


def _nullable(inner: Completer) -> Completer:
    def complete(run: _Run, value: Any, path: Path | None) -> Any:
        if value is None or value is Undefined:
            return None
        if isinstance(value, Exception):
            raise Abandoned
        return inner(run, value, path)

    return complete


def _leaf(coerce: Callable[[Any], Any]) -> Completer:
    def complete(run: _Run, value: Any, path: Path | None) -> Any:
        out = coerce(value)
        if out is None or out is Undefined:
            raise Abandoned
        return out

    return complete


def _non_null_leaf(coerce: Callable[[Any], Any]) -> Completer:
    """``_non_null(_leaf(coerce))`` in one call."""

    def complete(run: _Run, value: Any, path: Path | None) -> Any:
        if value is None or isinstance(value, Exception):
            raise Abandoned
        out = coerce(value)
        if out is None or out is Undefined:
            raise Abandoned
        return out

    return complete


def _nullable_leaf(coerce: Callable[[Any], Any]) -> Completer:
    """``_nullable(_leaf(coerce))`` in one call."""

    def complete(run: _Run, value: Any, path: Path | None) -> Any:
        if value is None or value is Undefined:
            return None
        if isinstance(value, Exception):
            raise Abandoned
        out = coerce(value)
        if out is None or out is Undefined:
            raise Abandoned
        return out

    return complete


def _list(item: Completer, nodes: list[FieldNode], item_non_null: bool) -> Completer:
    def complete(run: _Run, value: Any, path: Path | None) -> Any:
        if not isinstance(value, list | tuple):
            raise Abandoned  # generators, async iterables, non-iterables: graphql-core's
        out: list[Any] = []
        pending: list[int] | None = None
        is_awaitable = run.is_awaitable
        try:
            for i, v in enumerate(value):
                item_path = Path(path, i, None)
                try:
                    if is_awaitable(v):
                        done = run._later_item(item, v, item_path, nodes, item_non_null)
                    else:
                        done = item(run, v, item_path)
                except Exception as raw:  # graphql-core's complete_list_item_value
                    run.field_error(raw, nodes, item_path, item_non_null)
                    done = None
                if type(done) is CoroutineType:
                    done = run._catch_item(done, item_path, nodes, item_non_null)
                    if pending is None:
                        pending = []
                    pending.append(i)
                out.append(done)
        except BaseException:
            _discard(out[i] for i in pending or ())
            raise
        if pending is None:
            return out
        return _gather_items(out, pending)

    return complete


async def _gather_items(out: list[Any], pending: list[int]) -> list[Any]:
    if len(pending) == 1:
        i = pending[0]
        out[i] = await out[i]
        return out
    values = await _gather([out[i] for i in pending])
    for i, v in zip(pending, values, strict=True):
        out[i] = v
    return out


def _is_strawberry_type_check(fn: Callable[..., Any]) -> bool:
    """Strawberry's generated ``is_type_of`` (an isinstance test that ignores info)."""
    return getattr(fn, "__qualname__", "").endswith("_get_is_type_of.<locals>.is_type_of")


def _object(plan: ObjectPlan, field: FieldPlan | None) -> Completer:
    check = plan.type.is_type_of
    if check is None:

        def complete(run: _Run, value: Any, path: Path | None) -> Any:
            return run.object(plan, value, path)

        return complete
    if not _is_strawberry_type_check(check):
        raise Unplannable(f"{plan.type.name}.is_type_of is not Strawberry's")

    def checked(run: _Run, value: Any, path: Path | None) -> Any:
        if check(value, None) is not True:  # type: ignore[arg-type]
            raise Abandoned
        return run.object(plan, value, path)

    return checked


# --- planning ----------------------------------------------------------------------------


def build_plan(
    schema: GraphQLSchema, document: DocumentNode, operation_name: str | None
) -> Plan | None:
    """The plan of the operation ``operation_name`` of a valid ``document``, or None
    when it is not a query the plan handles exactly (see the module)."""
    try:
        return _Planner(schema, document).plan(operation_name)
    except Unplannable:
        return None


class _Planner:
    def __init__(self, schema: GraphQLSchema, document: DocumentNode) -> None:
        self.schema = schema
        self.document = document
        self.fragments: dict[str, FragmentDefinitionNode] = {}
        for d in document.definitions:
            if isinstance(d, FragmentDefinitionNode):
                if d.directives or getattr(d, "variable_definitions", None):
                    raise Unplannable("fragment directives or variables")
                self.fragments[d.name.value] = d

    def plan(self, operation_name: str | None) -> Plan:
        op = get_operation_ast(self.document, operation_name)
        if op is None or op.operation is not OperationType.QUERY:
            raise Unplannable("not a query")
        if op.directives or any(v.directives for v in op.variable_definitions or ()):
            raise Unplannable("operation directives")
        root = self.schema.query_type
        if root is None:
            raise Unplannable("no query type")
        self.operation: OperationDefinitionNode = op
        plan = self.object_plan(root, [op.selection_set])
        if not op.variable_definitions and all(f.typename for f in plan.fields):
            return Plan(plan, {f.key: f.typename for f in plan.fields})
        return Plan(plan)

    def object_plan(
        self, type_: GraphQLObjectType, selection_sets: Sequence[SelectionSetNode]
    ) -> ObjectPlan:
        grouped: dict[str, list[FieldNode]] = {}
        for selection_set in selection_sets:
            self.collect(type_, selection_set, grouped, set())
        fields = [self.field_plan(type_, key, nodes) for key, nodes in grouped.items()]
        return ObjectPlan(type_, fields)

    def collect(
        self,
        type_: GraphQLObjectType,
        selection_set: SelectionSetNode,
        grouped: dict[str, list[FieldNode]],
        visited: set[str],
    ) -> None:
        for sel in selection_set.selections:
            if sel.directives:
                raise Unplannable("directives")
            if isinstance(sel, FieldNode):
                key = sel.alias.value if sel.alias else sel.name.value
                grouped.setdefault(key, []).append(sel)
            elif isinstance(sel, InlineFragmentNode):
                if self.applies(sel.type_condition, type_):
                    self.collect(type_, sel.selection_set, grouped, visited)
            elif isinstance(sel, FragmentSpreadNode):
                name = sel.name.value
                if getattr(sel, "arguments", None):
                    raise Unplannable("fragment arguments")
                if name in visited:
                    continue
                visited.add(name)
                fragment = self.fragments.get(name)
                if fragment is None:
                    raise Unplannable(f"no fragment {name}")
                if self.applies(fragment.type_condition, type_):
                    self.collect(type_, fragment.selection_set, grouped, visited)
            else:
                raise Unplannable(f"selection {type(sel).__name__}")

    def applies(self, condition: Any, type_: GraphQLObjectType) -> bool:
        """graphql-core's ``does_fragment_condition_match``."""
        if condition is None:
            return True
        cond = self.schema.get_type(condition.name.value)
        if cond is type_:
            return True
        if cond is not None and is_abstract_type(cond):
            return self.schema.is_sub_type(cond, type_)
        return False

    def field_plan(self, parent: GraphQLObjectType, key: str, nodes: list[FieldNode]) -> FieldPlan:
        name = nodes[0].name.value
        if name == "__typename":
            return FieldPlan(key, None, nodes, parent, None, parent.name, None, _unused)
        if name.startswith("__"):
            raise Unplannable("introspection")
        field_def = parent.fields.get(name)
        if field_def is None:
            raise Unplannable(f"no field {parent.name}.{name}")
        complete = self.completer(field_def.type, nodes)
        named = field_def.type
        while isinstance(named, GraphQLNonNull | GraphQLList):
            named = named.of_type
        leaf = is_leaf_type(named) and not is_list_type(_nullable_of(field_def.type))
        needs_path = not leaf
        attr = _attribute(field_def)
        args: dict[str, Any] | None = {}
        if attr is None and (field_def.args or nodes[0].arguments):
            if any(_has_variable(a.value) for a in nodes[0].arguments or ()):
                args = None  # coerced per request
            else:
                try:
                    args = get_argument_values(field_def, nodes[0], None)
                except GraphQLError as exc:
                    raise Unplannable("arguments do not coerce") from exc
        if attr is not None and (nodes[0].arguments or field_def.args):
            attr = None  # a default resolver with arguments: through the resolver
            args = None
        direct = make_info = node_id = None
        if attr is None and not field_def.args and not nodes[0].arguments:
            found = _direct_resolver(field_def)
            if found is not None:
                direct, make_info = found
                node_id = _node_id(field_def, parent)
        return FieldPlan(
            key,
            field_def,
            nodes,
            parent,
            attr,
            None,
            args,
            complete,
            direct,
            needs_path,
            leaf,
            is_non_null_type(field_def.type),
            make_info,
            node_id,
        )

    def completer(self, type_: GraphQLOutputType, nodes: list[FieldNode]) -> Completer:
        if is_non_null_type(type_):
            assert isinstance(type_, GraphQLNonNull)
            if is_leaf_type(type_.of_type):
                return _non_null_leaf(type_.of_type.coerce_output_value)
            return _non_null(self._inner(type_.of_type, nodes))
        if is_leaf_type(type_):
            return _nullable_leaf(type_.coerce_output_value)
        return _nullable(self._inner(type_, nodes))

    def _inner(self, type_: Any, nodes: list[FieldNode]) -> Completer:
        if is_list_type(type_):
            assert isinstance(type_, GraphQLList)
            item_type = type_.of_type
            return _list(self.completer(item_type, nodes), nodes, is_non_null_type(item_type))
        if is_leaf_type(type_):
            return _leaf(type_.coerce_output_value)
        if is_object_type(type_):
            sets = [n.selection_set for n in nodes if n.selection_set]
            return _object(self.object_plan(type_, sets), None)
        raise Unplannable(f"abstract type {type_}")


def _unused(run: _Run, value: Any, path: Path | None) -> Any:  # pragma: no cover
    return value


def _attribute(field_def: GraphQLField) -> str | None:
    """The attribute a Strawberry field without a resolver reads by ``getattr``, else None."""
    resolve = field_def.resolve
    if resolve is None or not getattr(resolve, "_is_default", False):
        return None
    field = (field_def.extensions or {}).get(_STRAWBERRY_FIELD)
    if field is None or getattr(field, "base_resolver", None) is not None:
        return None
    if getattr(field, "default_resolver", getattr) is not getattr:
        return None
    name = getattr(field, "python_name", None)
    return name if isinstance(name, str) else None


def _nullable_of(type_: Any) -> Any:
    return type_.of_type if isinstance(type_, GraphQLNonNull) else type_


def _direct_resolver(
    field_def: GraphQLField,
) -> tuple[Callable[[Any, Any], Any], Callable[[Any], Any]] | None:
    """``(call, make_info)``: ``call(source, info)`` calls the field's resolver as
    Strawberry's wrapper does (parameters filled as ``schema_converter.get_arguments``
    fills them), for a field without arguments, extensions (permissions) or exception
    handlers; None otherwise."""
    resolve = field_def.resolve
    if resolve is None or getattr(resolve, "__name__", "") not in ("_resolver", "_async_resolver"):
        return None
    code = getattr(resolve, "__code__", None)
    cells = dict(zip(code.co_freevars, resolve.__closure__ or (), strict=True)) if code else {}
    try:
        handlers = cells["field_exception_handlers"].cell_contents
        make_info = cells["_strawberry_info_from_graphql"].cell_contents
        info_cells = dict(
            zip(make_info.__code__.co_freevars, make_info.__closure__ or (), strict=True)
        )
        field = info_cells["field"].cell_contents
    except (KeyError, ValueError, AttributeError):
        return None
    if handlers or field.extensions or field.arguments or field.base_resolver is None:
        return None
    resolver = field.base_resolver
    func = resolver.wrapped_func
    if not callable(func):
        return None
    takes_self = resolver.self_parameter is not None
    names = [p.name for p in (resolver.parent_parameter, resolver.root_parameter) if p is not None]
    info_name = resolver.info_parameter.name if resolver.info_parameter is not None else None
    known = {n for n in (*names, info_name) if n}
    if takes_self:
        known.add(resolver.self_parameter.name)
    params = list(resolver.signature.parameters)
    if inspect.ismethod(func) and params:
        known.add(params[0])  # a classmethod's ``cls``, bound already
    if set(params) - known:
        return None  # a parameter Strawberry would fill otherwise
    if not names and info_name == "info" and takes_self:

        def call_self_info(source: Any, info: Any) -> Any:
            return func(source, info=info)

        return call_self_info, make_info

    def call(source: Any, info: Any) -> Any:
        kwargs: dict[str, Any] = dict.fromkeys(names, source)
        if info_name is not None:
            kwargs[info_name] = info
        return func(source, **kwargs) if takes_self else func(**kwargs)

    return call, make_info


#: What ``_node_id`` relies on: Strawberry's ``Node.id`` resolver and the defaults it calls.
_NODE_DEFAULTS = {
    name: relay.Node.__dict__[name].__func__
    for name in ("_id", "resolve_id", "resolve_typename", "resolve_id_attr")
}


def _node_id(
    field_def: GraphQLField, parent: GraphQLObjectType
) -> Callable[[Any], str | None] | None:
    """``read(source)``: the response value of a Relay ``id`` field (Strawberry's
    ``Node._id`` serialized as ``ID``: base64 of ``"<parent type>:<id attribute>"``), or
    None where ``direct`` must run instead (``source`` not exactly the type's class, an
    id attribute not a str). None when the field is not ``Node._id`` of a type that keeps
    Node's ``resolve_id``, ``resolve_typename`` and ``resolve_id_attr``."""
    field = (field_def.extensions or {}).get(_STRAWBERRY_FIELD)
    func = getattr(getattr(field, "base_resolver", None), "wrapped_func", None)
    origin = getattr((parent.extensions or {}).get(_STRAWBERRY_TYPE), "origin", None)
    if getattr(func, "__func__", None) is not _NODE_DEFAULTS["_id"]:
        return None
    if not (isinstance(origin, type) and issubclass(origin, relay.Node)):
        return None
    if _nullable_of(field_def.type) is not GraphQLID:
        return None
    for name, default in _NODE_DEFAULTS.items():
        if getattr(getattr(origin, name), "__func__", None) is not default:
            return None
    try:
        attr = origin.resolve_id_attr()
    except Exception:  # no NodeID, or several: Node._id raises it per value
        return None
    if hasattr(inspect.getattr_static(origin, attr, None), "__get__"):
        return None  # a property or other descriptor: read by Node._id only
    head = f"{parent.name}:"

    def read(source: Any) -> str | None:
        if type(source) is not origin:
            return None
        pk = getattr(source, attr, None)
        if type(pk) is not str:
            return None
        # to_base64's base64.b64encode, without its call
        return binascii.b2a_base64(f"{head}{pk}".encode(), newline=False).decode()

    return read


def _has_variable(value: ValueNode) -> bool:
    if isinstance(value, VariableNode):
        return True
    if isinstance(value, ListValueNode):
        return any(_has_variable(v) for v in value.values)
    if isinstance(value, ObjectValueNode):
        return any(_has_variable(f.value) for f in value.fields)
    return False
