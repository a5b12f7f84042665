"""Pure functions that turn confusion matrices, elicited metrics and log counts into Plotly figure dicts.

Split by audience: `comparison` (the participant's question), `result` (the revealed metric, for the
participant and the back office), `monitor` (the back office's dashboard and session pages); `common` holds
the palette and the pieces they share; `inert` makes every figure's drawn text safe where it leaves the
server. Routes and services call these and hand the figures to templates
in their view models; templates only render them.
"""
