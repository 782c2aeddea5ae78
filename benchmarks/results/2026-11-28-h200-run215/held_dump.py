"""Debug probe (not part of the project): what holds device memory after a swap-out."""
import gc, sys


def owner_of_dict(d):
    for r in gc.get_referrers(d):
        if getattr(r, "__dict__", None) is d:
            return type(r).__name__
    return None


def describe(r, obj):
    t = type(r).__name__
    if isinstance(r, dict):
        keys = [repr(k)[:30] for k, v in r.items() if v is obj][:3]
        return f"dict{keys} of {owner_of_dict(r)}"
    if isinstance(r, (list, tuple)):
        return f"{t}[{len(r)}]"
    if hasattr(type(r), "__slots__"):
        names = [n for n in type(r).__slots__ if getattr(r, n, None) is obj]
        return f"{t}.{names}"
    return t


def dump(path, nbytes):
    import cupy
    gc.collect()
    pool = cupy.get_default_memory_pool()
    objs = []
    for o in gc.get_objects():
        try:
            if isinstance(o, cupy.ndarray) and o.nbytes >= nbytes and o.base is None:
                objs.append(o)
            elif isinstance(o, cupy.cuda.memory.MemoryPointer) and o.mem.size >= nbytes:
                objs.append(o)
        except Exception:
            pass
    with open(path, "a") as out:
        out.write(f"== used {pool.used_bytes()} ; {len(objs)} objects >= {nbytes}\n")
        for a in objs:
            out.write(f"-- {type(a).__name__} {getattr(a, 'shape', '')} {getattr(a, 'nbytes', '')}\n")
            seen = {id(objs)}

            def walk(obj, depth):
                if depth > 7:
                    return
                for r in gc.get_referrers(obj):
                    if id(r) in seen or type(r).__name__ in ("frame",):
                        continue
                    if isinstance(r, list) and len(r) > 5000:
                        continue
                    seen.add(id(r))
                    out.write(f"{'  ' * depth}{describe(r, obj)}\n")
                    walk(r, depth + 1)
            walk(a, 1)
