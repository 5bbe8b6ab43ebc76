"""Losses and return estimators, time-major, in the naming of rlax (``_t``: at step ``t``).

Shapes are ``[T, B]`` unless stated; every function is batched over ``B`` already.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def generalized_advantage_estimation(
    r_t: jax.Array,
    v_t: jax.Array,
    v_next_t: jax.Array,
    terminated_t: jax.Array,
    truncated_t: jax.Array,
    gamma: float,
    lam: float,
) -> tuple[jax.Array, jax.Array]:
    """GAE(γ, λ) with episode boundaries inside the window.

    Schulman, Moritz, Levine, Jordan & Abbeel (2016), arXiv:1506.02438.

    Step ``t`` moves from ``s_t`` to ``s'_t`` with reward ``r_t``; ``v_next_t = V(s'_t)`` is the
    value of the state actually reached (the final state of an episode that ended at ``t``).

        δ_t = r_t + γ (1 − terminated_t) V(s'_t) − V(s_t)
        A_t = δ_t + γ λ (1 − done_t) A_{t+1},      done_t = terminated_t ∨ truncated_t

    A terminal state is worth zero, so termination does not bootstrap; truncation does (from the
    final observation) but, like termination, stops the λ-sum from crossing into the next episode.
    Beyond the window, ``A_T = 0``: the last step's estimate is its one-step TD error.

    Args:
      r_t, v_t, v_next_t: ``[T, B]`` floats.
      terminated_t, truncated_t: ``[T, B]`` booleans.
    Returns:
      ``(advantages, returns)`` both ``[T, B]``; ``returns = advantages + v_t`` (value targets).
    """
    not_terminal = 1.0 - terminated_t.astype(r_t.dtype)
    continues = 1.0 - jnp.logical_or(terminated_t, truncated_t).astype(r_t.dtype)
    delta_t = r_t + gamma * not_terminal * v_next_t - v_t

    def backward(a_next, xs):
        delta, cont = xs
        a = delta + gamma * lam * cont * a_next
        return a, a

    _, advantages = jax.lax.scan(
        backward, jnp.zeros_like(delta_t[0]), (delta_t, continues), reverse=True
    )
    return advantages, advantages + v_t


def vtrace(
    v_t: jax.Array,
    v_next_t: jax.Array,
    r_t: jax.Array,
    terminated_t: jax.Array,
    truncated_t: jax.Array,
    log_rho_t: jax.Array,
    gamma: float,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    lam: float = 1.0,
) -> tuple[jax.Array, jax.Array]:
    """V-trace value targets and policy-gradient advantages, with episode boundaries inside the
    window.

    Espeholt, Soyer, Munos, Simonyan, Mnih, Ward, Doron, Firoiu, Harley, Dunning, Legg &
    Kavukcuoglu (2018), "IMPALA", arXiv:1802.01561, section 4.

    The trajectory was collected by a behaviour policy μ; ``log_rho_t = log π(a_t|s_t) −
    log μ(a_t|s_t)`` compares the policy being learned, π. With truncated importance weights
    ``ρ_t = min(ρ̄, e^{log_rho_t})`` and ``c_t = λ min(c̄, e^{log_rho_t})``:

        δ_t = ρ_t (r_t + γ (1 − terminated_t) V(s'_t) − V(s_t))
        v_t − V(s_t) = δ_t + γ (1 − terminated_t) c_t (1 − done_t) (v_{t+1} − V(s_{t+1}))
        A^π_t = ρ_t (r_t + γ (1 − terminated_t) v'_t − V(s_t))

    where ``done_t = terminated_t ∨ truncated_t`` stops the trace from crossing into the next
    episode, and ``v'_t`` is ``v_{t+1}`` where the episode goes on inside the window, else
    ``V(s'_t)`` (the value of the state reached: an episode's last, or the window's end). On
    policy (``ρ = c = 1``) the targets are the n-step returns to the window's end, GAE's with λ = 1.
    Nothing here carries a gradient: the targets and advantages are constants of the loss.

    Args:
      v_t, v_next_t: ``V(s_t)`` and ``V(s'_t)``, ``[T, B]`` (or ``[T]``: every function here is
        elementwise beyond the time axis).
      r_t, log_rho_t: ``[T, B]`` floats.
      terminated_t, truncated_t: ``[T, B]`` booleans.
    Returns:
      ``(targets v_t, advantages A^π_t)``, both ``[T, B]``.
    """
    v_t, v_next_t, log_rho_t = (jax.lax.stop_gradient(x) for x in (v_t, v_next_t, log_rho_t))
    ratio = jnp.exp(log_rho_t)
    rho, c = jnp.minimum(rho_bar, ratio), lam * jnp.minimum(c_bar, ratio)
    discount = gamma * (1.0 - terminated_t.astype(r_t.dtype))
    continues = 1.0 - jnp.logical_or(terminated_t, truncated_t).astype(r_t.dtype)
    delta = rho * (r_t + discount * v_next_t - v_t)

    def backward(acc_next, xs):  # acc = v_{t+1} − V(s_{t+1}) within the episode
        delta, discount, c, cont = xs
        acc = delta + discount * c * cont * acc_next
        return acc, acc

    _, corrections = jax.lax.scan(
        backward, jnp.zeros_like(delta[0]), (delta, discount, c, continues), reverse=True
    )
    targets = v_t + corrections
    following = jnp.concatenate([targets[1:], v_next_t[-1:]])
    next_targets = jnp.where(continues > 0, following, v_next_t)
    return targets, rho * (r_t + discount * next_targets - v_t)


def q_lambda_returns(
    r_t: jax.Array,
    q_next_t: jax.Array,
    terminated_t: jax.Array,
    truncated_t: jax.Array,
    gamma: float,
    lam: float,
) -> jax.Array:
    """Q(λ) targets over a window, bootstrapping from ``max_a Q`` at every step.

    The λ-return of Peng's Q(λ) (Peng & Williams 1996), which, unlike Watkins's, never cuts the
    return at an exploratory action; PQN computes it from its online network (Gallici et al.
    2024, "Simplifying Deep Temporal Difference Learning", arXiv:2407.04811). With
    ``q_next_t = max_a Q(s'_t, a)``, the value of the state actually reached after step ``t``
    (the final state of an episode that ended at ``t``),

        G_t = r_t + γ (1 − terminated_t) [(1 − λ) q_next_t + λ G_{t+1}]    the episode goes on
        G_t = r_t + γ (1 − terminated_t) q_next_t                          it ended at t, or t = T−1

    so a terminal state is worth zero, a truncated episode bootstraps from its final state, and
    no return crosses into the next episode or past the window. λ = 0 gives one-step Q-learning
    targets; λ = 1 the discounted rewards to the episode's or the window's end plus the bootstrap
    there.

    Args:
      r_t, q_next_t: ``[T, B]`` floats.
      terminated_t, truncated_t: ``[T, B]`` booleans.
    Returns:
      ``G`` ``[T, B]``, with no gradient through it.
    """
    not_terminal = 1.0 - terminated_t.astype(r_t.dtype)
    continues = 1.0 - jnp.logical_or(terminated_t, truncated_t).astype(r_t.dtype)

    def backward(g_next, xs):
        r, q_next, not_term, cont = xs
        # (1 − λ) q_next + λ G_{t+1} where the episode goes on, q_next where it ended.
        mixed = q_next + lam * cont * (g_next - q_next)
        g = r + gamma * not_term * mixed
        return g, g

    # Beyond the window G_T stands in as q_next_{T−1}: the last step is a one-step target.
    xs = (r_t, q_next_t, not_terminal, continues)
    _, returns = jax.lax.scan(backward, q_next_t[-1], xs, reverse=True)
    return jax.lax.stop_gradient(returns)


def normalize(x: jax.Array, eps: float = 1e-8) -> jax.Array:
    """``(x − mean) / (std + eps)`` over all elements."""
    return (x - x.mean()) / (x.std() + eps)


def clipped_surrogate_loss(
    log_prob: jax.Array, log_prob_old: jax.Array, advantages: jax.Array, epsilon: float
) -> tuple[jax.Array, jax.Array]:
    """PPO's clipped objective, as a loss to minimise. Schulman et al. (2017), arXiv:1707.06347.

        ρ = exp(log π(a|s) − log π_old(a|s))
        L = −E[min(ρ A, clip(ρ, 1 − ε, 1 + ε) A)]

    Returns ``(loss, clip_fraction)`` where ``clip_fraction`` is the share of samples with
    ``|ρ − 1| > ε``. Any batch shape.
    """
    ratio = jnp.exp(log_prob - log_prob_old)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - epsilon, 1.0 + epsilon) * advantages
    loss = -jnp.minimum(unclipped, clipped).mean()
    clip_fraction = (jnp.abs(ratio - 1.0) > epsilon).astype(jnp.float32).mean()
    return loss, clip_fraction


def clipped_value_loss(
    value: jax.Array, value_old: jax.Array, target: jax.Array, epsilon: float
) -> jax.Array:
    """PPO's clipped value loss (as in OpenAI baselines' ``ppo2``):

        V_clip = V_old + clip(V − V_old, −ε, ε)
        L = ½ E[max((V − G)², (V_clip − G)²)]

    The target ``G`` is treated as a constant. Any batch shape.
    """
    target = jax.lax.stop_gradient(target)
    value_clipped = value_old + jnp.clip(value - value_old, -epsilon, epsilon)
    return 0.5 * jnp.maximum((value - target) ** 2, (value_clipped - target) ** 2).mean()


def approx_kl(log_prob: jax.Array, log_prob_old: jax.Array) -> jax.Array:
    """Low-variance estimator of KL(π_old ‖ π): E[(ρ − 1) − log ρ].

    Schulman (2020), "Approximating KL Divergence".
    """
    log_ratio = log_prob - log_prob_old
    return ((jnp.exp(log_ratio) - 1.0) - log_ratio).mean()


def n_step_returns(
    r_t: jax.Array,
    terminated_t: jax.Array,
    truncated_t: jax.Array,
    gamma: float,
    n: int,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """n-step returns inside a window of ``T`` steps, for replay (Sutton 1988; Hessel et al. 2018).

    For each step ``t`` the return runs over ``k ≤ n`` steps, stopping early where an episode
    ends (termination or truncation) or the window does:

        G_t = Σ_{j<k} γ^j r_{t+j}        discount_t = γ^k (1 − terminated_{t+k−1})

    so the TD target ``G_t + discount_t · V(s'_{t+k−1})`` bootstraps from the state actually
    reached after the last included step (the final observation on truncation) and not at all
    on termination.

    Args:
      r_t: ``[T, B]`` rewards; ``terminated_t``, ``truncated_t``: ``[T, B]`` booleans.
    Returns:
      ``(G [T, B], discount [T, B], last [T, B] int32)``: ``last`` indexes the step whose
      ``next_observation`` to bootstrap from.
    """
    steps = r_t.shape[0]
    t = jnp.broadcast_to(jnp.arange(steps, dtype=jnp.int32)[:, None], r_t.shape)
    ended = jnp.logical_or(terminated_t, truncated_t)
    ret = jnp.zeros_like(r_t)
    discount = jnp.ones_like(r_t)
    alive = jnp.ones(r_t.shape, bool)
    last = t
    for j in range(n):
        index = jnp.minimum(t + j, steps - 1)
        valid = alive & (t + j < steps)
        reward = jnp.take_along_axis(r_t, index, axis=0)
        terminal = jnp.take_along_axis(terminated_t, index, axis=0)
        ret = ret + jnp.where(valid, discount * reward, 0.0)
        last = jnp.where(valid, index, last)
        discount = jnp.where(valid, discount * gamma * (1.0 - terminal.astype(r_t.dtype)), discount)
        alive = valid & ~jnp.take_along_axis(ended, index, axis=0)
    return ret, discount, last


def td_target(reward: jax.Array, discount: jax.Array, next_value: jax.Array) -> jax.Array:
    """``y = r + discount · V(s')`` with no gradient through the target (any batch shape)."""
    return jax.lax.stop_gradient(reward + discount * next_value)


def q_learning_next_value(
    q_next_target: jax.Array, q_next_online: jax.Array | None = None
) -> jax.Array:
    """The bootstrap value of Q-learning, ``[B, A] -> [B]``.

    Plain (Watkins 1989; Mnih et al. 2015): ``max_a Q_target(s', a)``. Double Q-learning
    (van Hasselt, Guez & Silver 2016), when ``q_next_online`` is given: the online network
    chooses, the target network evaluates, ``Q_target(s', argmax_a Q_online(s', a))``.
    """
    if q_next_online is None:
        return q_next_target.max(axis=-1)
    best = jnp.argmax(q_next_online, axis=-1)
    return jnp.take_along_axis(q_next_target, best[..., None], axis=-1)[..., 0]


def weighted_mean(x: jax.Array, weights: jax.Array) -> jax.Array:
    """``mean(w · x)``: importance-weighted loss of prioritized replay (ones for uniform)."""
    return jnp.mean(weights * x)


def categorical_projection(z_t: jax.Array, p_t: jax.Array, support: jax.Array) -> jax.Array:
    """The categorical (Cramér / "l2") projection of a distribution on atoms ``z_t`` onto a fixed,
    evenly spaced ``support``: C51's projection Φ (Bellemare, Dabney & Munos 2017, "A
    Distributional Perspective on Reinforcement Learning", arXiv:1707.06887, Algorithm 1).

    With ``z_i = v_min + i Δz`` (``i < N``, ``v_min = support[0]``, ``v_max = support[-1]``), each
    source atom, clipped into ``[v_min, v_max]``, gives its probability to the two support atoms
    around it in proportion to closeness:

        ẑ_j   = clip(z_t[j], v_min, v_max)
        (Φ)_i = Σ_j p_t[j] · max(0, 1 − |ẑ_j − z_i| / Δz)

    An atom that lands on ``z_i`` gives it all its mass; one beyond the support gives it to the
    end atom. Mass is conserved: the result sums to ``Σ_j p_t[j]``.

    Args:
      z_t: ``[..., K]`` source atoms (for C51 the shifted and scaled support ``r + γ z``).
      p_t: ``[..., K]`` their probabilities.
      support: ``[N]`` the fixed atoms, ``N ≥ 2``, evenly spaced and increasing.
    Returns:
      ``[..., N]`` probabilities on ``support``.
    """
    delta = support[1] - support[0]
    z = jnp.clip(z_t, support[0], support[-1])
    # [..., N, K]: the share of source atom j that support atom i receives.
    share = jnp.clip(1.0 - jnp.abs(z[..., None, :] - support[:, None]) / delta, 0.0, 1.0)
    return jnp.sum(share * p_t[..., None, :], axis=-1)


def categorical_td_target(
    reward: jax.Array, discount: jax.Array, p_next: jax.Array, support: jax.Array
) -> jax.Array:
    """C51's target distribution ``Φ(r + discount · Z(s'))`` with no gradient through it.

    ``reward``, ``discount``: ``[B]`` (n-step, as in :func:`td_target`); ``p_next``: ``[B, N]``
    the probabilities of the bootstrap action's return at ``s'`` on ``support`` ``[N]``.
    Returns ``[B, N]``; a terminal transition (``discount = 0``) puts all its mass at ``r``
    (on the one or two atoms around it).
    """
    shifted = reward[..., None] + discount[..., None] * support
    return jax.lax.stop_gradient(categorical_projection(shifted, p_next, support))


def categorical_cross_entropy(logits: jax.Array, target: jax.Array) -> jax.Array:
    """``−Σ_i target_i · log softmax(logits)_i`` over the last axis: ``[..., N] -> [...]``.

    C51's loss (the KL divergence from ``target`` up to ``target``'s own entropy, which has no
    gradient); ``target`` is held constant.
    """
    target = jax.lax.stop_gradient(target)
    return -jnp.sum(target * jax.nn.log_softmax(logits, axis=-1), axis=-1)
