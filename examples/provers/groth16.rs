//! A Groth16 prover on BLS12-377 (ark-groth16's proving key, circuit and verifier) whose G1
//! MSMs run on a [`GpuMsm`]: the A, B-in-G1, H and L queries of the proving key are loaded
//! once as resident bases; B in G2 stays with arkworks. The proof is the same function of
//! the witness and the randomness (r, s) as `ark_groth16::Groth16::prove`, so
//! `Groth16::verify_proof` accepts it.

use std::time::{Duration, Instant};

use ark_bls12_377::{Bls12_377, Fr, G1Affine, G1Projective, G2Projective};
use ark_ec::{CurveGroup, VariableBaseMSM};
use ark_ff::{Field, UniformRand, Zero};
use ark_groth16::r1cs_to_qap::{LibsnarkReduction, R1CSToQAP};
use ark_groth16::{Proof, ProvingKey};
use ark_poly::GeneralEvaluationDomain;
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, ConstraintSystemRef, OptimizationGoal, SynthesisError,
    SynthesisMode,
};
use ark_relations::lc;
use ark_std::rand::Rng;
use gpu_msm::{Bases, GpuMsm};

/// x_{i+1} = x_i^2 for `steps` steps from a secret x_0; the public input is x_steps. One
/// constraint per step.
#[derive(Clone)]
pub struct SquaringChain {
    /// Number of squarings (constraints).
    pub steps: usize,
    /// The secret start, `None` during setup.
    pub x0: Option<Fr>,
}

impl SquaringChain {
    /// The public output x0^(2^steps).
    pub fn output(&self) -> Fr {
        let mut x = self.x0.expect("a witness");
        for _ in 0..self.steps {
            x.square_in_place();
        }
        x
    }
}

impl ConstraintSynthesizer<Fr> for SquaringChain {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
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

/// The proving key's G1 queries, resident on the engine's device.
pub struct GpuProver<'a> {
    engine: &'a GpuMsm,
    pk: &'a ProvingKey<Bls12_377>,
    a: Bases,
    b_g1: Bases,
    h: Bases,
    l: Bases,
}

/// Time spent in the prover's G1 MSMs.
#[derive(Debug, Clone, Copy, Default)]
pub struct MsmTimes {
    /// With the engine.
    pub gpu_msm: Duration,
    /// The same MSMs with arkworks' `VariableBaseMSM::msm`.
    pub arkworks: Duration,
}

/// A synthesized circuit: the QAP witness h, the public inputs and the private witness.
struct Assignment {
    h: Vec<Fr>,
    inputs: Vec<Fr>,
    witness: Vec<Fr>,
}

fn synthesize<C: ConstraintSynthesizer<Fr>>(circuit: C) -> Result<Assignment, SynthesisError> {
    let cs = ConstraintSystem::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(SynthesisMode::Prove {
        construct_matrices: true,
        generate_lc_assignments: false,
    });
    circuit.generate_constraints(cs.clone())?;
    cs.finalize();
    let h = LibsnarkReduction::witness_map::<Fr, GeneralEvaluationDomain<Fr>>(cs.clone())?;
    let prover = cs.borrow().ok_or(SynthesisError::MissingCS)?;
    let inputs = prover.instance_assignment()?[1..].to_vec();
    let witness = prover.witness_assignment()?.to_vec();
    Ok(Assignment { h, inputs, witness })
}

impl<'a> GpuProver<'a> {
    /// Loads the proving key's G1 queries on `engine` (the first element of the A and B
    /// queries, the constant term, stays on the host).
    pub fn new(engine: &'a GpuMsm, pk: &'a ProvingKey<Bls12_377>) -> gpu_msm::Result<Self> {
        Ok(Self {
            engine,
            pk,
            a: engine.load_bases(&pk.a_query[1..])?,
            b_g1: engine.load_bases(&pk.b_g1_query[1..])?,
            h: engine.load_bases(&pk.h_query)?,
            l: engine.load_bases(&pk.l_query)?,
        })
    }

    /// A proof with randomness (r, s), its G1 MSMs on the engine; the MSMs are timed, and
    /// run again with arkworks for the comparison when `compare` is set.
    pub fn prove<C: ConstraintSynthesizer<Fr>>(
        &self,
        circuit: C,
        r: Fr,
        s: Fr,
        compare: bool,
    ) -> Result<(Proof<Bls12_377>, MsmTimes), String> {
        let Assignment { h, inputs, witness } = synthesize(circuit).map_err(|e| e.to_string())?;
        let assignment: Vec<Fr> = inputs.iter().chain(&witness).copied().collect();
        let h = &h[..h.len().min(self.h.len())];
        let e = self.engine;
        let t = Instant::now();
        let msm = |b: &Bases, k: &[Fr]| e.msm(b, k).map_err(|e| e.to_string());
        let sums = [
            msm(&self.a, &assignment)?,
            msm(&self.b_g1, &assignment)?,
            msm(&self.h, h)?,
            msm(&self.l, &witness)?,
        ];
        let mut times = MsmTimes {
            gpu_msm: t.elapsed(),
            ..Default::default()
        };
        if compare {
            let t = Instant::now();
            let ark = |b: &Bases, k: &[Fr]| G1Projective::msm(&b.points()[..k.len()], k).unwrap();
            let cpu = [
                ark(&self.a, &assignment),
                ark(&self.b_g1, &assignment),
                ark(&self.h, h),
                ark(&self.l, &witness),
            ];
            times.arkworks = t.elapsed();
            if cpu != sums {
                return Err("a G1 MSM differs from arkworks".into());
            }
        }
        let [a_acc, b_acc, h_acc, l_acc] = sums;
        let pk = self.pk;
        let g_a = pk.delta_g1 * r + pk.a_query[0] + a_acc + pk.vk.alpha_g1;
        let g1_b = if r.is_zero() {
            G1Projective::zero()
        } else {
            pk.delta_g1 * s + pk.b_g1_query[0] + b_acc + pk.beta_g1
        };
        let b_g2 = G2Projective::msm(&pk.b_g2_query[1..], &assignment).map_err(|_| "B in G2")?;
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
pub fn randomness(rng: &mut impl Rng) -> (Fr, Fr) {
    (Fr::rand(rng), Fr::rand(rng))
}

/// The G1 bases of a proving key (for reports).
pub fn g1_bases(pk: &ProvingKey<Bls12_377>) -> usize {
    let all: [&[G1Affine]; 4] = [&pk.a_query, &pk.b_g1_query, &pk.h_query, &pk.l_query];
    all.iter().map(|q| q.len()).sum()
}
