"""Run 150's diagnostic (not part of the project): print why a stretch's capture fails or is
refused, into a copy of the tree (argument: its root)."""
import sys
root = sys.argv[1]
p = root + "/gpu_backend/worker/graph_replay.py"
s = open(p).read()
s = s.replace("""                    except Exception:   # ended with an invalidated capture: which op is unknown
                        complete = False""", """                    except Exception as _dbg:   # ended with an invalidated capture: which op is unknown
                        import sys; print("DIAG capture failed", repr(_dbg)[:300], [(o.index, o.kind, o.name) for o in seg.ops], file=sys.stderr)
                        complete = False""")
s = s.replace("""                    except _CaptureRefused as refused:
                        state.eager.add(refused.index)""", """                    except _CaptureRefused as refused:
                        import sys; print("DIAG refused", refused.index, [(o.index, o.kind, o.name) for o in seg.ops if o.index == refused.index], file=sys.stderr)
                        state.eager.add(refused.index)""")
s = s.replace("""            if state.attempts >= MAX_ATTEMPTS:
                state.give_up()""", """            if state.attempts >= MAX_ATTEMPTS:
                import sys; print("DIAG attempts exhausted", [(o.index, o.name) for o in stretch.items if hasattr(o, 'name')][:30], file=sys.stderr)
                state.give_up()""")
s = s.replace("""        remade = kept_views.judge(stretch, shape.alive, shape.maker, arrays,
                                  lambda a: self.x.device.memory_span(a)[1])""", """        remade = kept_views.judge(stretch, shape.alive, shape.maker, arrays,
                                  lambda a: self.x.device.memory_span(a)[1])
        if remade is None or not shape.graphable:
            import sys; print("DIAG not servable", remade is None, shape.graphable, [(o.index, o.kind, o.name) for o in stretch.items if hasattr(o, 'name')][:30], file=sys.stderr)""")
open(p, "w").write(s)
print("patched", s.count("DIAG"))
