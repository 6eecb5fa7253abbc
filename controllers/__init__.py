"""The controller library: the thesis' PD and quintic controllers (Fig. 6.2) and
forward-dynamic controllers (joint PD with gravity compensation, computed torque)."""
from .forward import computed_torque, joint_pd_gravity
from .primitives import (
                         Quintic,
                         orient_with_pd,
                         orient_with_quintic,
                         pd_time_constant,
                         position_point_with_pd,
                         position_point_with_quintic,
                         position_with_pd,
                         position_with_quintic,
                         rotation,
                         set_angle_with_pd,
                         set_angle_with_quintic,
)

__all__ = [
    "Quintic", "computed_torque", "joint_pd_gravity", "orient_with_pd", "orient_with_quintic",
    "pd_time_constant", "position_point_with_pd", "position_point_with_quintic", "position_with_pd",
    "position_with_quintic", "rotation", "set_angle_with_pd", "set_angle_with_quintic",
]
