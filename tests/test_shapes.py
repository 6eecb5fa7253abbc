"""Primitive shapes: closed-form volume, centre of mass and inertia; coal geometry; bad input."""
import math

import coal
import numpy as np
import pinocchio as pin
import pytest

from controlkit.errors import ModelError
from robots.shapes import Cone, Cuboid, Cylinder, Pipe, Sphere, cone, cuboid, cylinder, pipe, sphere

REL = 1e-12


def close(a, b, rel=REL):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(np.max(np.abs(b)), 1e-300)
    return np.max(np.abs(a - b)) <= rel * scale


# Closed forms written out independently of robots.shapes: (shape, volume, com, inertia about COM for mass m)
def closed_forms():
    x, y, z = 0.3, 1.7, 0.45
    r, L = 0.21, 1.3
    ro, ri = 0.4, 0.33
    h = 0.9
    return [
        (cuboid(x, y, z), x * y * z, [0, 0, 0], lambda m: m / 12 * np.diag([y**2 + z**2, x**2 + z**2, x**2 + y**2])),
        (sphere(r), 4 / 3 * math.pi * r**3, [0, 0, 0], lambda m: 2 / 5 * m * r**2 * np.eye(3)),
        (
            cylinder(r, L),
            math.pi * r**2 * L,
            [0, 0, 0],
            lambda m: np.diag([m * (3 * r**2 + L**2) / 12, m * (3 * r**2 + L**2) / 12, m * r**2 / 2]),
        ),
        (
            cone(r, h),
            math.pi * r**2 * h / 3,
            [0, 0, h / 4],
            lambda m: np.diag([3 / 80 * m * (4 * r**2 + h**2), 3 / 80 * m * (4 * r**2 + h**2), 3 / 10 * m * r**2]),
        ),
        (
            pipe(ro, ri, L),
            math.pi * (ro**2 - ri**2) * L,
            [0, 0, 0],
            lambda m: np.diag(
                [m * (3 * (ro**2 + ri**2) + L**2) / 12, m * (3 * (ro**2 + ri**2) + L**2) / 12, m * (ro**2 + ri**2) / 2]
            ),
        ),
    ]


@pytest.mark.parametrize("shape,volume,com,inertia", closed_forms(), ids=lambda v: getattr(v, "kind", None))
def test_mass_com_inertia_match_closed_forms(shape, volume, com, inertia):
    assert close(shape.volume(), volume)
    assert np.allclose(shape.com(), com, rtol=REL, atol=1e-15)
    m = 2.7
    assert close(shape.inertia_com(m), inertia(m))
    rho = 1234.5
    I = shape.inertia(density=rho)
    assert isinstance(I, pin.Inertia)
    assert close(I.mass, rho * volume)
    assert np.allclose(I.lever, com, rtol=REL, atol=1e-15)
    assert close(I.inertia, inertia(rho * volume))
    J = shape.inertia(mass=m)
    assert close(J.mass, m)
    assert close(J.inertia, inertia(m))


def test_cone_frame_is_the_base_centre_and_com_is_a_quarter_up():
    c = Cone(0.5, 2.0)
    assert np.allclose(c.com(), [0, 0, 0.5])
    assert np.allclose(c.features()["apex"], [0, 0, 2.0])
    assert np.allclose(c.features()["base"], [0, 0, 0])
    # coal's cone is centred at mid-height: its placement in the shape frame lifts it by h/2
    g = c.geometry()
    assert isinstance(g, coal.Cone) and g.radius == 0.5 and g.halfLength == 1.0
    assert np.allclose(c.geometry_placement().translation, [0, 0, 1.0])


def test_inertia_agrees_with_coal_integral_properties():
    # an independent integrator: coal's own volume and inertia of the primitive shapes (unit density)
    for s in (Cuboid(0.3, 0.5, 0.7), Sphere(0.4), Cylinder(0.2, 0.9), Cone(0.3, 0.8)):
        g = s.geometry()
        assert g.computeVolume() == pytest.approx(s.volume(), rel=1e-9)
        I = np.asarray(g.computeMomentofInertiaRelatedToCOM())
        assert np.allclose(I, s.unit_inertia() * s.volume(), rtol=1e-9, atol=1e-12)


def test_coal_geometries():
    assert np.allclose(cuboid(1, 2, 3).geometry().halfSide, [0.5, 1.0, 1.5])
    assert sphere(0.3).geometry().radius == 0.3
    cy = cylinder(0.3, 2.0).geometry()
    assert isinstance(cy, coal.Cylinder) and cy.radius == 0.3 and cy.halfLength == 1.0


def test_pipe_collision_mesh_keeps_the_hole():
    p = Pipe(0.5, 0.4, 2.0, segments=64)
    mesh = p.geometry()
    assert isinstance(mesh, coal.BVHModelOBBRSS)
    assert mesh.num_vertices == 4 * 64 and mesh.num_tris == 8 * 64
    assert mesh.computeVolume() == pytest.approx(p.volume(), rel=5e-3)

    def hits(center, radius):
        req, res = coal.CollisionRequest(), coal.CollisionResult()
        return coal.collide(mesh, coal.Transform3s(), coal.Sphere(radius), coal.Transform3s(np.eye(3), np.array(center)), req, res) > 0

    assert not hits([0, 0, 0], 0.3)  # a ball in the hole touches nothing
    assert hits([0.5, 0, 0], 0.03)  # a ball crossing the outer surface does
    assert hits([0, 0.4, 0.3], 0.03)  # and one crossing the inner surface
    assert not hits([0.7, 0, 0], 0.1)  # one outside does not


@pytest.mark.parametrize(
    "make,shape,param",
    [
        (lambda: Cuboid(1.0, 0.0, 1.0), "cuboid", "y"),
        (lambda: Cuboid(1.0, 1.0, -2.0), "cuboid", "z"),
        (lambda: Sphere(-0.1), "sphere", "radius"),
        (lambda: Cylinder(0.1, 0.0), "cylinder", "length"),
        (lambda: Cone(0.0, 1.0), "cone", "radius"),
        (lambda: Pipe(0.2, 0.1, float("nan")), "pipe", "length"),
        (lambda: Pipe(0.2, -0.1, 1.0), "pipe", "inner_radius"),
    ],
)
def test_non_positive_dimension_names_shape_and_parameter(make, shape, param):
    with pytest.raises(ModelError) as e:
        make()
    assert f"{shape}: {param} must be positive" in str(e.value)


def test_pipe_inner_radius_must_be_smaller():
    with pytest.raises(ModelError, match=r"pipe: inner_radius \(0.5 m\) must be smaller than outer_radius \(0.5 m\)"):
        Pipe(0.5, 0.5, 1.0)


def test_non_positive_density_or_mass():
    with pytest.raises(ModelError, match="density must be positive"):
        cuboid(1, 1, 1).inertia(density=0.0)
    with pytest.raises(ModelError, match="mass must be positive"):
        sphere(1).inertia(mass=-1.0)
    with pytest.raises(ModelError, match="exactly one of density"):
        sphere(1).inertia(density=1.0, mass=1.0)
    with pytest.raises(ModelError, match="exactly one of density"):
        sphere(1).inertia()
