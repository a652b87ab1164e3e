"""Keywords that combine or point at other schemas: $ref, allOf, anyOf, oneOf, not, if/then/else.

Same contract as ``keywords.py``. A branch "matches" when it has no error of
severity "error"; the warnings of the branch that matched are kept (so an
``x-amldist-unknown-keys`` warning inside a oneOf branch still reaches the user).
"""

from __future__ import annotations

from amldist.validate.evaluator import EMPTY, SchemaCompileError, SchemaError, is_valid


def _warnings(errors):
    return [e for e in errors if e.severity != "error"]


def _ref(compiler, schema, base):
    ref = schema["$ref"]
    if not isinstance(ref, str):
        raise SchemaCompileError(f"$ref must be a string, not {ref!r}")
    target_schema, target_base = compiler.registry.resolve(base, ref)
    target = None

    def check(instance):
        nonlocal target
        if target is None:  # compiled on first use: refs may be recursive
            target = compiler.compile(target_schema, target_base)
        return target(instance)

    return check


def _all_of(compiler, schema, base):
    subs = tuple(compiler.compile(sub, base) for sub in schema["allOf"])

    def check(instance):
        errors = None
        for sub in subs:
            found = sub(instance)
            if found:
                errors = errors or []
                errors.extend(found)
        return errors or EMPTY

    return check


def _any_of(compiler, schema, base):
    subs = tuple(compiler.compile(sub, base) for sub in schema["anyOf"])

    def check(instance):
        context = []
        for sub in subs:
            found = sub(instance)
            if is_valid(found):
                return _warnings(found) or EMPTY
            context.append(found)
        return [SchemaError("anyOf", schema, instance, {"base": base}, context=context)]

    return check


def _one_of(compiler, schema, base):
    subs = tuple(compiler.compile(sub, base) for sub in schema["oneOf"])

    def check(instance):
        context = []
        valid = []
        for index, sub in enumerate(subs):
            found = sub(instance)
            context.append(found)
            if is_valid(found):
                valid.append(index)
        if len(valid) == 1:
            return _warnings(context[valid[0]]) or EMPTY
        if not valid:
            return [SchemaError("oneOf", schema, instance, {"base": base}, context=context)]
        return [SchemaError("oneOf", schema, instance, {"matched": valid})]

    return check


def _not(compiler, schema, base):
    sub = compiler.compile(schema["not"], base)

    def check(instance):
        return [SchemaError("not", schema, instance)] if is_valid(sub(instance)) else EMPTY

    return check


def _if(compiler, schema, base):
    condition = compiler.compile(schema["if"], base)
    then = compiler.compile(schema["then"], base) if "then" in schema else None
    else_ = compiler.compile(schema["else"], base) if "else" in schema else None
    if then is None and else_ is None:
        return None

    def check(instance):
        branch = then if is_valid(condition(instance)) else else_
        return branch(instance) if branch is not None else EMPTY

    return check
