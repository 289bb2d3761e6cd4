//! A Groth16 prover (ark-groth16's proving key, circuit and verifier) whose MSMs run on
//! [`GpuMsm`] engines, on any pairing whose G1 and G2 the engine computes on
//! ([`GpuPairing`]: BLS12-377, BN254, BLS12-381): the A, B-in-G1, H and L queries of the
//! proving key are loaded once as resident bases on a G1 engine, and the B query in G2 on a
//! G2 engine (or left to arkworks when none is given). The proof is the same function of the
//! witness and the randomness (r, s) as `ark_groth16::Groth16::prove`, so
//! `Groth16::verify_proof` accepts it.

use std::time::{Duration, Instant};

use ark_ec::pairing::Pairing;
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{CurveGroup, VariableBaseMSM};
use ark_ff::{PrimeField, Zero};
use ark_groth16::r1cs_to_qap::{LibsnarkReduction, R1CSToQAP};
use ark_groth16::{Proof, ProvingKey};
use ark_poly::GeneralEvaluationDomain;
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, ConstraintSystemRef, OptimizationGoal, SynthesisError,
    SynthesisMode,
};
use ark_relations::lc;
use ark_std::rand::Rng;
use gpu_msm::Fr;
use gpu_msm::{Bases, GpuCurve, GpuMsm};

/// A pairing whose G1 and G2 both have engines: `G1Config` and `G2Config` name their curve
/// configs.
pub trait GpuPairing:
    Pairing<
    G1 = Projective<Self::G1Config>,
    G1Affine = Affine<Self::G1Config>,
    G2 = Projective<Self::G2Config>,
    G2Affine = Affine<Self::G2Config>,
    ScalarField = Fr<Self::G1Config>,
>
{
    /// G1's curve config.
    type G1Config: GpuCurve;
    /// G2's curve config (the same scalar field).
    type G2Config: GpuCurve<ScalarField = Fr<Self::G1Config>>;
}

macro_rules! gpu_pairing {
    ($e:ty, $g1:ty, $g2:ty) => {
        impl GpuPairing for $e {
            type G1Config = $g1;
            type G2Config = $g2;
        }
    };
}

gpu_pairing!(
    ark_bls12_377::Bls12_377,
    ark_bls12_377::g1::Config,
    ark_bls12_377::g2::Config
);
gpu_pairing!(
    ark_bn254::Bn254,
    ark_bn254::g1::Config,
    ark_bn254::g2::Config
);
gpu_pairing!(
    ark_bls12_381::Bls12_381,
    ark_bls12_381::g1::Config,
    ark_bls12_381::g2::Config
);

/// x_{i+1} = x_i^2 for `steps` steps from a secret x_0; the public input is x_steps. One
/// constraint per step.
#[derive(Clone)]
pub struct SquaringChain<F: PrimeField> {
    /// Number of squarings (constraints).
    pub steps: usize,
    /// The secret start, `None` during setup.
    pub x0: Option<F>,
}

impl<F: PrimeField> SquaringChain<F> {
    /// The public output x0^(2^steps).
    pub fn output(&self) -> F {
        let mut x = self.x0.expect("a witness");
        for _ in 0..self.steps {
            x.square_in_place();
        }
        x
    }
}

impl<F: PrimeField> ConstraintSynthesizer<F> for SquaringChain<F> {
    fn generate_constraints(self, cs: ConstraintSystemRef<F>) -> Result<(), SynthesisError> {
        let mut value = self.x0;
        let mut x = cs.new_witness_variable(|| value.ok_or(SynthesisError::AssignmentMissing))?;
        for i in 0..self.steps {
            value = value.map(|v| v.square());
            let last = i + 1 == self.steps;
            let get = || value.ok_or(SynthesisError::AssignmentMissing);
            let y = if last {
                cs.new_input_variable(get)?
            } else {
                cs.new_witness_variable(get)?
            };
            cs.enforce_r1cs_constraint(|| lc!() + x, || lc!() + x, || lc!() + y)?;
            x = y;
        }
        Ok(())
    }
}

/// The proving key's queries, resident on the engines' devices.
pub struct GpuProver<'a, E: GpuPairing> {
    g1: &'a GpuMsm<E::G1Config>,
    pk: &'a ProvingKey<E>,
    a: Bases<E::G1Config>,
    b_g1: Bases<E::G1Config>,
    h: Bases<E::G1Config>,
    l: Bases<E::G1Config>,
    /// The B query in G2 and its engine; `None`: arkworks computes it.
    b_g2: Option<G2Query<'a, E>>,
}

/// The B query in G2, resident on the G2 engine.
struct G2Query<'a, E: GpuPairing> {
    engine: &'a GpuMsm<E::G2Config>,
    bases: Bases<E::G2Config>,
}

/// Time spent in the prover's MSMs.
#[derive(Debug, Clone, Copy, Default)]
pub struct MsmTimes {
    /// With the engines (the G2 MSM with arkworks where the prover has no G2 engine).
    pub gpu_msm: Duration,
    /// The same MSMs with arkworks' `VariableBaseMSM::msm`.
    pub arkworks: Duration,
}

/// A synthesized circuit: the QAP witness h, the public inputs and the private witness.
struct Assignment<F> {
    h: Vec<F>,
    inputs: Vec<F>,
    witness: Vec<F>,
}

fn synthesize<F: PrimeField, C: ConstraintSynthesizer<F>>(
    circuit: C,
) -> Result<Assignment<F>, SynthesisError> {
    let cs = ConstraintSystem::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(SynthesisMode::Prove {
        construct_matrices: true,
        generate_lc_assignments: false,
    });
    circuit.generate_constraints(cs.clone())?;
    cs.finalize();
    let h = LibsnarkReduction::witness_map::<F, GeneralEvaluationDomain<F>>(cs.clone())?;
    let prover = cs.borrow().ok_or(SynthesisError::MissingCS)?;
    let inputs = prover.instance_assignment()?[1..].to_vec();
    let witness = prover.witness_assignment()?.to_vec();
    Ok(Assignment { h, inputs, witness })
}

impl<'a, E: GpuPairing> GpuProver<'a, E> {
    /// Loads the proving key's G1 queries on `g1`, and its B query in G2 on `g2` where
    /// given (the first element of the A and B queries, the constant term, stays on the
    /// host).
    pub fn new(
        g1: &'a GpuMsm<E::G1Config>,
        g2: Option<&'a GpuMsm<E::G2Config>>,
        pk: &'a ProvingKey<E>,
    ) -> gpu_msm::Result<Self> {
        let b_g2 = match g2 {
            Some(engine) => Some(G2Query {
                engine,
                bases: engine.load_bases(&pk.b_g2_query[1..])?,
            }),
            None => None,
        };
        Ok(Self {
            g1,
            pk,
            a: g1.load_bases(&pk.a_query[1..])?,
            b_g1: g1.load_bases(&pk.b_g1_query[1..])?,
            h: g1.load_bases(&pk.h_query)?,
            l: g1.load_bases(&pk.l_query)?,
            b_g2,
        })
    }

    /// A proof with randomness (r, s), its MSMs on the engines; the MSMs are timed, and run
    /// again with arkworks for the comparison when `compare` is set.
    pub fn prove<C: ConstraintSynthesizer<E::ScalarField>>(
        &self,
        circuit: C,
        r: E::ScalarField,
        s: E::ScalarField,
        compare: bool,
    ) -> Result<(Proof<E>, MsmTimes), String> {
        let Assignment { h, inputs, witness } = synthesize(circuit).map_err(|e| e.to_string())?;
        let assignment: Vec<E::ScalarField> = inputs.iter().chain(&witness).copied().collect();
        let h = &h[..h.len().min(self.h.len())];
        let e = self.g1;
        let pk = self.pk;
        let t = Instant::now();
        let msm =
            |b: &Bases<E::G1Config>, k: &[E::ScalarField]| e.msm(b, k).map_err(|e| e.to_string());
        let sums = [
            msm(&self.a, &assignment)?,
            msm(&self.b_g1, &assignment)?,
            msm(&self.h, h)?,
            msm(&self.l, &witness)?,
        ];
        let ark_g2 = || Projective::<E::G2Config>::msm(&pk.b_g2_query[1..], &assignment);
        let b_g2 = match &self.b_g2 {
            Some(q) => (q.engine.msm(&q.bases, &assignment)).map_err(|e| e.to_string())?,
            None => ark_g2().map_err(|_| "B in G2")?,
        };
        let mut times = MsmTimes {
            gpu_msm: t.elapsed(),
            ..Default::default()
        };
        if compare {
            let t = Instant::now();
            let ark = |b: &Bases<E::G1Config>, k: &[E::ScalarField]| {
                Projective::<E::G1Config>::msm(&b.points()[..k.len()], k).unwrap()
            };
            let cpu = [
                ark(&self.a, &assignment),
                ark(&self.b_g1, &assignment),
                ark(&self.h, h),
                ark(&self.l, &witness),
            ];
            let cpu_g2 = ark_g2().map_err(|_| "B in G2")?;
            times.arkworks = t.elapsed();
            if cpu != sums {
                return Err("a G1 MSM differs from arkworks".into());
            }
            // Without a G2 engine both are arkworks': nothing to compare.
            if self.b_g2.is_some() && cpu_g2 != b_g2 {
                return Err("the G2 MSM differs from arkworks".into());
            }
        }
        let [a_acc, b_acc, h_acc, l_acc] = sums;
        let g_a = pk.delta_g1 * r + pk.a_query[0] + a_acc + pk.vk.alpha_g1;
        let g1_b = if r.is_zero() {
            Projective::<E::G1Config>::zero()
        } else {
            pk.delta_g1 * s + pk.b_g1_query[0] + b_acc + pk.beta_g1
        };
        let g2_b = pk.vk.delta_g2 * s + pk.b_g2_query[0] + b_g2 + pk.vk.beta_g2;
        let g_c = g_a * s + g1_b * r - pk.delta_g1 * (r * s) + l_acc + h_acc;
        Ok((
            Proof {
                a: g_a.into_affine(),
                b: g2_b.into_affine(),
                c: g_c.into_affine(),
            },
            times,
        ))
    }
}

/// Fresh prover randomness.
pub fn randomness<F: PrimeField>(rng: &mut impl Rng) -> (F, F) {
    (F::rand(rng), F::rand(rng))
}

/// The G1 and G2 bases of a proving key (for reports).
pub fn bases<E: Pairing>(pk: &ProvingKey<E>) -> (usize, usize) {
    let g1 = [&pk.a_query, &pk.b_g1_query, &pk.h_query, &pk.l_query];
    (g1.iter().map(|q| q.len()).sum(), pk.b_g2_query.len())
}
