"""Studies: many runs of the simulator compared in one table (the application layer).

Beside the command line, this package may import ``sim``, ``robots`` and ``controllers``;
the core (the rest of ``controlkit``) does not import it.

- :mod:`controlkit.studies.compare`: one task under inverse dynamics, computed torque and joint PD.
"""
